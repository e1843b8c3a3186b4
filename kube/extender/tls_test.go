package extender_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/testcert"
	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/kube/extender"
	"github.com/schedrl/schedrl/kube/kubetest"
	"github.com/schedrl/schedrl/policy"
)

// TestMutualTLSWithKubeScheduler: the extender serves over TLS and answers only clients with a
// certificate its client CA signed; the real kube-scheduler, configured with enableHTTPS and a
// tlsConfig (CA, client certificate), binds every pod where the simulator puts it. Without a
// client certificate the verbs answer 401, as with one from another CA,
// /healthz stays open for probes, /metrics lives only on its own address, and a body over the
// limit gets 413.
func TestMutualTLSWithKubeScheduler(t *testing.T) {
	p := experiment(t)
	nodes, tasks := p.Nodes[:100], p.Workload[:40]
	serverCA, clientCA, rogueCA := testcert.NewCA(t, "serving"), testcert.NewCA(t, "clients"), testcert.NewCA(t, "rogue")
	certFile, keyFile := serverCA.Server(t, "extender")
	schedCert, schedKey := clientCA.Client(t, "kube-scheduler")
	rogueCert, rogueKey := rogueCA.Client(t, "intruder")

	k, err := testserver.StartKube()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := kubetest.RegisterNodes(ctx, k, nodes); err != nil {
		t.Fatal(err)
	}
	client, err := k.Client()
	if err != nil {
		t.Fatal(err)
	}
	mirror := kube.NewMirror(client, kube.MirrorOptions{Model: p.Model, TieSeed: seed})
	if err := mirror.Start(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	fgd, _ := policy.NewPlacer("fgd")
	const maxBody = 1 << 20
	srv := extender.New(extender.Options{Client: client, Mirror: mirror, Placer: fgd, Seed: seed, Model: "fgd", MaxBody: maxBody})
	ln, mln := listenLoopback(t), listenLoopback(t)
	served := make(chan error, 1)
	go func() {
		served <- srv.Serve(ctx, extender.Endpoint{Listener: ln, MetricsListener: mln,
			CertFile: certFile, KeyFile: keyFile, ClientCAFile: clientCA.File}, nil)
	}()
	url := "https://" + ln.Addr().String()
	if err := k.StartScheduler(testserver.Extender{URL: url, CAFile: serverCA.File, CertFile: schedCert, KeyFile: schedKey}); err != nil {
		t.Fatal(err)
	}
	got, err := kubetest.Submit(ctx, client, "default", tasks, time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, k.SchedulerLog())
	}
	ref := *p
	ref.Nodes = nodes
	want, err := kubetest.Simulate(&ref, tasks, fgd)
	if err != nil {
		t.Fatal(err)
	}
	if d := kubetest.Diff(got, want, 10); len(d) > 0 {
		t.Fatalf("kube-scheduler over mutual TLS disagrees with the simulator:\n%s\n%s", strings.Join(d, "\n"), k.SchedulerLog())
	}

	anonymous := tlsClient(t, serverCA.File, "", "")
	if code, body := call(t, anonymous, "GET", url+"/healthz", nil); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz without a client certificate: %d %q, want 200 ok", code, body)
	}
	if code, _ := call(t, anonymous, "POST", url+"/filter", []byte("{}")); code != http.StatusUnauthorized {
		t.Errorf("/filter without a client certificate: %d, want 401", code)
	}
	// Go's client offers no certificate the server's CA list does not name: 401, or a refused
	// handshake from another client that sends it anyway.
	if resp, err := tlsClient(t, serverCA.File, rogueCert, rogueKey).Post(url+"/filter", "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("/filter with a certificate of another CA: %d, want 401 or a failed handshake", resp.StatusCode)
		}
	}
	sched := tlsClient(t, serverCA.File, schedCert, schedKey)
	if code, body := call(t, sched, "POST", url+"/filter", bytes.Repeat([]byte(" "), maxBody+1)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("/filter with a body over %d bytes: %d %q, want 413", maxBody, code, body)
	}
	if code, _ := call(t, sched, "GET", url+"/metrics", nil); code != http.StatusNotFound {
		t.Errorf("/metrics on the verbs' address: %d, want 404 (served on its own address)", code)
	}
	code, body := call(t, &http.Client{Timeout: 30 * time.Second}, "GET", "http://"+mln.Addr().String()+"/metrics", nil)
	for _, w := range []string{`schedrl_extender_decisions_total{result="placed",verb="filter"} 40`,
		`schedrl_extender_decisions_total{result="too-large",verb="filter"} 1`} {
		if code != http.StatusOK || !strings.Contains(body, w) {
			t.Errorf("metrics address: status %d, no %q in:\n%s", code, w, body)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve after shutdown: %v", err)
	}
}

// TestEndpointValidate: TLS flags that do not go together are refused, naming the flags.
func TestEndpointValidate(t *testing.T) {
	for _, c := range []struct {
		ep   extender.Endpoint
		want string
	}{
		{extender.Endpoint{CertFile: "c.pem"}, "--tls-cert-file and --tls-key-file go together"},
		{extender.Endpoint{KeyFile: "k.pem"}, "--tls-cert-file and --tls-key-file go together"},
		{extender.Endpoint{ClientCAFile: "ca.pem"}, "--tls-client-ca-file needs TLS"},
	} {
		if err := c.ep.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.ep, err, c.want)
		}
	}
	if err := (extender.Endpoint{CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}).Validate(); err != nil {
		t.Error(err)
	}
}

func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// tlsClient trusts caFile and, with certFile, presents that client certificate.
func tlsClient(t *testing.T, caFile, certFile, keyFile string) *http.Client {
	t.Helper()
	pemCA, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

func call(t *testing.T, c *http.Client, method, url string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}
