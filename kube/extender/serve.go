package extender

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultListen is where the extender listens unless told otherwise: loopback, so a bare
// `schedrl serve extender` is reachable only from its own host (a kube-scheduler beside it);
// an operator asks for other interfaces with --listen (the manifests listen on :8888 behind TLS).
const DefaultListen = "127.0.0.1:8888"

// Endpoint is where and how the extender is served.
type Endpoint struct {
	// Listen is the verbs' address (DefaultListen when empty); Listener overrides it (tests).
	Listen   string
	Listener net.Listener
	// MetricsListen serves /metrics (plain HTTP) on its own address, and the verbs' address
	// then has none; empty: /metrics beside the verbs. MetricsListener overrides it (tests).
	MetricsListen   string
	MetricsListener net.Listener
	// CertFile and KeyFile (PEM) serve the verbs and /healthz over TLS, as kube-scheduler's
	// `enableHTTPS: true` expects.
	CertFile, KeyFile string
	// ClientCAFile (PEM) makes the verbs answer only clients whose certificate it signed: the
	// scheduler presents one through its extender tlsConfig certFile/keyFile. /healthz stays
	// open for the kubelet's probes, which present none.
	ClientCAFile string
}

// Validate checks the combination before anything listens; errors name the flags.
func (e Endpoint) Validate() error {
	if (e.CertFile == "") != (e.KeyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together: give both or neither")
	}
	if e.ClientCAFile != "" && e.CertFile == "" {
		return errors.New("--tls-client-ca-file needs TLS: give --tls-cert-file and --tls-key-file too")
	}
	return nil
}

// TLS reports whether the verbs are served over TLS.
func (e Endpoint) TLS() bool { return e.CertFile != "" }

// serverTLS loads the serving certificate and, with ClientCAFile, the pool that verifies clients.
func (e Endpoint) serverTLS() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(e.CertFile, e.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file %s / --tls-key-file %s: %w", e.CertFile, e.KeyFile, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if e.ClientCAFile != "" {
		pem, err := os.ReadFile(e.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-client-ca-file %s: no PEM certificate in it", e.ClientCAFile)
		}
		// Verified when given, required by the verbs (verifiedOnly): /healthz needs none.
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// Serve serves the extender on ep until ctx ends, then shuts down within 5 s. ready, if not
// nil, is called with the verbs' and the metrics' addresses once both listen.
func (s *Server) Serve(ctx context.Context, ep Endpoint, ready func(verbs, metrics net.Addr)) error {
	if err := ep.Validate(); err != nil {
		return err
	}
	var tcfg *tls.Config
	if ep.TLS() {
		var err error
		if tcfg, err = ep.serverTLS(); err != nil {
			return err
		}
	}
	ln, err := listen(ep.Listener, ep.Listen, DefaultListen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if tcfg != nil {
		ln = tls.NewListener(ln, tcfg)
	}
	routes := Routes{Metrics: ep.MetricsListen == "" && ep.MetricsListener == nil, VerifiedClients: ep.ClientAuth()}
	servers := []*httpServer{newHTTPServer(ln, s.HandlerFor(routes))}
	var mAddr net.Addr
	if !routes.Metrics {
		mln, err := listen(ep.MetricsListener, ep.MetricsListen, "")
		if err != nil {
			ln.Close()
			return fmt.Errorf("--metrics-listen: %w", err)
		}
		mAddr = mln.Addr()
		servers = append(servers, newHTTPServer(mln, s.MetricsHandler()))
	}
	if ready != nil {
		ready(ln.Addr(), mAddr)
	}
	return serveAll(ctx, servers)
}

// ClientAuth reports whether the verbs require a verified client certificate.
func (e Endpoint) ClientAuth() bool { return e.ClientCAFile != "" }

func listen(ln net.Listener, addr, def string) (net.Listener, error) {
	if ln != nil {
		return ln, nil
	}
	if addr == "" {
		addr = def
	}
	return net.Listen("tcp", addr)
}

// MetricsHandler serves /metrics alone (for Endpoint.MetricsListen).
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	return mux
}

type httpServer struct {
	hs *http.Server
	ln net.Listener
}

// newHTTPServer bounds every phase of a request: a client that stops sending or reading
// cannot hold a connection for ever.
func newHTTPServer(ln net.Listener, h http.Handler) *httpServer {
	return &httpServer{ln: ln, hs: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}}
}

// serveAll serves every server until ctx ends or one fails, then shuts all down within 5 s.
func serveAll(ctx context.Context, servers []*httpServer) error {
	failed := make(chan error, len(servers))
	for _, s := range servers {
		go func() { failed <- s.hs.Serve(s.ln) }()
	}
	var first error
	select {
	case first = <-failed:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		if err := s.hs.Shutdown(sctx); err != nil && first == nil {
			first = err
		}
	}
	if errors.Is(first, http.ErrServerClosed) {
		first = nil
	}
	return first
}
