package registry

import (
	"bytes"
	"context"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/checkpoint"
)

// servePopulated publishes two versions (with report plots) and serves the page; it returns
// the page URL.
func servePopulated(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := open(t, fileConfig(t))
	v1, err := r.Publish(ctx, "web-model", makeCheckpoint(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	// Version 2 was fine-tuned from version 1.
	child := makeCheckpoint(t, 2)
	m, err := checkpoint.Read(child)
	if err != nil {
		t.Fatal(err)
	}
	m.Parent = v1.Digest
	if _, err := checkpoint.Write(child, m); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Publish(ctx, "web-model", child); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Promote(ctx, "web-model@2", "champion"); err != nil {
		t.Fatal(err)
	}
	addr := make(chan net.Addr, 1)
	errc := make(chan error, 1)
	go func() { errc <- r.Serve(ctx, "127.0.0.1:0", func(a net.Addr) { addr <- a }) }()
	select {
	case a := <-addr:
		return "http://" + a.String() + "/"
	case err := <-errc:
		t.Fatal(err)
	}
	return ""
}

func TestPageServesVersionsAndPlots(t *testing.T) {
	url := servePopulated(t)
	page := get(t, url)
	for _, want := range []string{`id="web-model@1"`, `id="web-model@2"`, `class="alias">champion`, "ds0002", `class="mono config">cfg01<`, `class="mono code">rev2<`, "frag_reduction", `class="mono parent">web-model@1<`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	srcs := regexp.MustCompile(`<img class="plot" src="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(srcs) != 2 {
		t.Fatalf("%d plots on the page, want 2", len(srcs))
	}
	for _, src := range srcs {
		img, err := png.Decode(bytes.NewReader([]byte(get(t, strings.TrimSuffix(url, "/")+src[1]))))
		if err != nil || img.Bounds().Dx() != 40 {
			t.Fatalf("plot %s: %v", src[1], err)
		}
	}
	for _, bad := range []string{"files/web-model/1/model.ot", "files/web-model/9/report/frag.png", "files/..%2f/1/report/x.png"} {
		if resp, err := http.Get(url + bad); err != nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %v %v, want 404", bad, resp.StatusCode, err)
		}
	}
}

// TestPageInChromium loads the page in headless Chromium and checks, in the DOM it
// rendered, the versions and that each plot image loaded (its onload set data-loaded).
func TestPageInChromium(t *testing.T) {
	bin := os.Getenv("CHROMIUM")
	if bin == "" {
		bin = "chromium"
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Fatalf("%s not found: run `make setup` (scripts/setup.d/40-chromium.sh) or set CHROMIUM=", bin)
	}
	url := servePopulated(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	t.Logf("chromium rendered the page in %v", time.Since(start))
	for _, want := range []string{`id="web-model@1"`, `id="web-model@2"`, "champion"} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("rendered DOM lacks %s", want)
		}
	}
	if n := bytes.Count(dom, []byte(`data-loaded="40"`)); n != 2 {
		t.Fatalf("%d of 2 plots loaded in the browser; DOM:\n%s", n, dom)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return string(body)
}
