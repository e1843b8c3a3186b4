package registry

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedrl/schedrl/internal/checkpoint"
)

//go:embed web/*.html
var webFiles embed.FS

var pageTemplate = template.Must(template.New("index.html").Funcs(template.FuncMap{
	"short": shortDigest,
	"num":   func(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) },
}).ParseFS(webFiles, "web/index.html"))

// pageModel and pageVersion are what the page template shows.
type pageModel struct {
	Name     string
	Versions []pageVersion // newest first
	Metrics  []string      // metric columns: the union over versions
}

type pageVersion struct {
	Version
	Parent string   // MODEL@N of the parent checkpoint, its digest if unpublished
	Plots  []string // URLs of report PNGs
}

// ServeTimeouts bound what one client can hold of the registry's web server: a client that
// sends its request slowly, or reads the answer slowly, or keeps an idle connection open, is
// cut off.
type ServeTimeouts struct {
	ReadHeader time.Duration // the request's line and headers
	Read       time.Duration // the whole request, body included
	Write      time.Duration // from the end of the request's headers to the end of the answer
	Idle       time.Duration // an open keep-alive connection between requests
}

// DefaultServeTimeouts are documented in docs/deploy.md; the page of a large store is built
// within seconds, and report plots are small.
var DefaultServeTimeouts = ServeTimeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 60 * time.Second, Idle: 120 * time.Second}

// Serve serves Handler on addr until ctx ends; ready, if not nil, gets the bound address
// (useful with port 0). The store must exist and answer: a server on a mistyped or
// unreachable store fails at start, not on its first page.
func (r *Registry) Serve(ctx context.Context, addr string, ready func(net.Addr)) error {
	check, cancel := context.WithTimeout(ctx, time.Minute)
	_, err := r.Models(check)
	cancel()
	if err != nil {
		return fmt.Errorf("registry serve: %w", err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("registry serve: %w", err)
	}
	t := r.serveTimeouts
	srv := &http.Server{Handler: r.Handler(), ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write, IdleTimeout: t.Idle}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	r.log.Info("registry page", "url", "http://"+l.Addr().String()+"/", "store", r.store.URI(""))
	if ready != nil {
		ready(l.Addr())
	}
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("registry serve: %w", err)
	}
	return nil
}

// Handler serves the registry's web page at / and report files at /files/MODEL/N/report/...
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", r.servePage)
	mux.HandleFunc("GET /files/{model}/{version}/{file...}", r.serveFile)
	return mux
}

func (r *Registry) servePage(w http.ResponseWriter, req *http.Request) {
	models, err := r.pageModels(req.Context())
	if err != nil {
		r.log.Error("registry page", "err", err)
		http.Error(w, "registry: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, map[string]any{"Store": r.store.URI(""), "Models": models}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

func (r *Registry) pageModels(ctx context.Context) ([]pageModel, error) {
	names, err := r.Models(ctx)
	if err != nil {
		return nil, err
	}
	all := map[string][]Version{}
	byDigest := map[string]string{}
	for _, name := range names {
		versions, err := r.Versions(ctx, name)
		if err != nil {
			return nil, err
		}
		all[name] = versions
		for _, v := range versions {
			if _, seen := byDigest[v.Digest]; !seen {
				byDigest[v.Digest] = v.Ref()
			}
		}
	}
	var out []pageModel
	for _, name := range names {
		pm := pageModel{Name: name}
		metrics := map[string]bool{}
		for _, v := range slices.Backward(all[name]) {
			pv := pageVersion{Version: v, Parent: shortDigest(v.Manifest.Parent)}
			if ref, ok := byDigest[v.Manifest.Parent]; ok {
				pv.Parent = ref
			}
			for _, f := range v.Manifest.Files {
				if strings.HasPrefix(f.Path, "report/") && path.Ext(f.Path) == ".png" {
					pv.Plots = append(pv.Plots, fmt.Sprintf("/files/%s/%d/%s", name, v.Number, f.Path))
				}
			}
			for k := range v.Manifest.Metrics {
				metrics[k] = true
			}
			pm.Versions = append(pm.Versions, pv)
		}
		pm.Metrics = slices.Sorted(maps.Keys(metrics))
		out = append(out, pm)
	}
	return out, nil
}

func shortDigest(s string) string { return s[:min(len(s), 12)] }

// serveFile sends one report file of a version after checking it against the manifest.
func (r *Registry) serveFile(w http.ResponseWriter, req *http.Request) {
	model, file := req.PathValue("model"), req.PathValue("file")
	n, err := strconv.Atoi(req.PathValue("version"))
	if err != nil || ValidateName("model", model) != nil || !strings.HasPrefix(file, "report/") {
		http.NotFound(w, req)
		return
	}
	v, err := r.version(req.Context(), model, n)
	if err != nil {
		http.NotFound(w, req)
		return
	}
	i := slices.IndexFunc(v.Manifest.Files, func(f checkpoint.File) bool { return f.Path == file })
	if i < 0 {
		http.NotFound(w, req)
		return
	}
	key := versionPrefix(model, n) + file
	rc, err := r.store.Get(req.Context(), key)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer rc.Close()
	var buf bytes.Buffer
	if err := verifyStream(&buf, rc, r.store.URI(key), v.Manifest.Files[i]); err != nil {
		r.log.Error("registry page", "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	ctype := "application/octet-stream"
	if path.Ext(file) == ".png" {
		ctype = "image/png"
	}
	w.Header().Set("Content-Type", ctype)
	w.Write(buf.Bytes())
}
