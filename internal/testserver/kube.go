package testserver

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Kube is a Kubernetes control plane on loopback: etcd, kube-apiserver (TLS with a generated
// CA, a static admin token, RBAC) and, once StartScheduler is called, kube-scheduler. Until
// StartNode adds a node there is no kubelet and no controller manager: pods are scheduled and
// bound, never run, and nothing re-creates an evicted pod unless the test does.
type Kube struct {
	URL   string // https://127.0.0.1:PORT
	Token string // bearer token of the admin user (group system:masters)
	CA    []byte // PEM of the CA that signed the API server's certificate
	Dir   string // data, certificates, configs and logs; removed by Close

	etcdURL   string
	apiPort   int
	hostIP    string // the machine's address, in the serving certificate for nodes' clients
	nodes     bool   // the API server was reconfigured for nodes (enableNodes)
	etcd      *process
	apiserver *process
	scheduler *process
}

// StartKube starts etcd and kube-apiserver in a new temporary folder and waits until the API
// server is ready.
func StartKube() (*Kube, error) {
	etcdBin, err := tool("bin/etcd", "25-kube.sh")
	if err != nil {
		return nil, err
	}
	apiBin, err := tool("bin/kube-apiserver", "25-kube.sh")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "schedrl-kube-")
	if err != nil {
		return nil, err
	}
	k, err := newKube(dir, etcdBin, apiBin)
	if err == nil {
		err = k.startEtcd()
	}
	if err == nil {
		err = k.StartAPIServer()
	}
	if err != nil {
		k.Close()
		return nil, err
	}
	return k, nil
}

func newKube(dir, etcdBin, apiBin string) (*Kube, error) {
	ports := make([]int, 3)
	for i := range ports {
		p, err := restartablePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	// No address is no error: only StartNode needs one.
	hostIP, _ := nodeIP()
	k := &Kube{Dir: dir, Token: randomKey("tok"), apiPort: ports[2], hostIP: hostIP,
		etcdURL: "http://127.0.0.1:" + strconv.Itoa(ports[0])}
	k.URL = "https://127.0.0.1:" + strconv.Itoa(k.apiPort)
	if err := k.writeCerts(); err != nil {
		return nil, err
	}
	tokens := fmt.Sprintf("%s,admin,admin-uid,\"system:masters\"\n", k.Token)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return nil, err
	}
	peer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	k.etcd = &process{name: "etcd", log: filepath.Join(dir, "etcd.log"), argv: []string{etcdBin,
		"--name", "default", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", k.etcdURL, "--advertise-client-urls", k.etcdURL,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "default=" + peer,
		// Test data: durability across a power cut is not needed, speed on a shared disk is.
		"--unsafe-no-fsync", "--log-level", "warn"}}
	c := func(name string) string { return filepath.Join(dir, "certs", name) }
	k.apiserver = &process{name: "kube-apiserver", log: filepath.Join(dir, "kube-apiserver.log"), argv: []string{apiBin,
		"--etcd-servers", k.etcdURL, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(k.apiPort), "--tls-cert-file", c("server.crt"), "--tls-private-key-file", c("server.key"),
		"--token-auth-file", filepath.Join(dir, "tokens.csv"), "--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", c("sa.pub"),
		"--service-account-signing-key-file", c("sa.key"), "--service-cluster-ip-range", "10.0.0.0/24",
		// No controller manager creates the service accounts pods would need, and no kubelet would
		// clear the not-ready taint new nodes get.
		"--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition",
		// A test node's name is not in DNS: logs and exec reach its kubelet by address.
		"--kubelet-preferred-address-types", "InternalIP,Hostname", "--v", "1"}}
	return k, nil
}

// restartablePort is a free port below the kernel's ephemeral range. A server restarted on a
// port from that range can find it taken: while it is down, a client retrying a connection to
// it may be given that very port as its own and connect to itself.
func restartablePort() (int, error) {
	lo := 32768
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				lo = v
			}
		}
	}
	const base = 10000
	if lo <= base+100 {
		return FreePort()
	}
	for range 100 {
		port := base + mrand.IntN(lo-base)
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("testserver: no free port in %d..%d", base, lo-1)
}

// writeCerts generates a CA, the API server's certificate for 127.0.0.1 and the service
// account signing key.
func (k *Kube) writeCerts() error {
	dir := filepath.Join(k.Dir, "certs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "schedrl-test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	srvKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}
	if k.hostIP != "" {
		ips = append(ips, net.ParseIP(k.hostIP))
	}
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		IPAddresses: ips,
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	k.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	files := map[string][]byte{
		"ca.crt":     k.CA,
		"server.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
		"server.key": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(srvKey)}),
		"sa.key":     pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}),
		"sa.pub":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (k *Kube) startEtcd() error {
	if err := k.etcd.start(); err != nil {
		return err
	}
	return k.etcd.waitHTTP(k.etcdURL+"/health", 60*time.Second)
}

// StartAPIServer (re)starts kube-apiserver on its port, over the same etcd, and waits for
// /readyz.
func (k *Kube) StartAPIServer() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	waitPortFree(ctx, "127.0.0.1:"+strconv.Itoa(k.apiPort))
	if err := k.apiserver.start(); err != nil {
		return err
	}
	return k.waitHTTPS(k.apiserver, k.URL+"/readyz", 120*time.Second)
}

// enableNodes restarts the API server as a cluster with nodes needs it: listening on every
// address, because a node's kubelet and pods live in their own network namespace and reach it
// at the machine's address (also what the kubernetes Service points at); and with the
// ServiceAccount admission plugin, so pods get their account's token. Without a controller
// manager that plugin would refuse every pod (no default account), so plain clusters keep it off.
func (k *Kube) enableNodes() error {
	if k.nodes {
		return nil
	}
	if k.hostIP == "" {
		return errors.New("testserver: no non-loopback IPv4 address for the nodes to reach the API server at")
	}
	argv := slices.Clone(k.apiserver.argv)
	for i := 0; i+1 < len(argv); i++ {
		switch argv[i] {
		case "--bind-address":
			argv[i+1] = "0.0.0.0"
		case "--advertise-address":
			argv[i+1] = k.hostIP
		case "--disable-admission-plugins":
			argv[i+1] = "TaintNodesByCondition"
		}
	}
	// A client CA makes the API server publish kube-system/extension-apiserver-authentication,
	// which kube-scheduler and kube-controller-manager read (and log its absence every few seconds).
	argv = append(argv, "--client-ca-file", filepath.Join(k.Dir, "certs", "ca.crt"))
	k.apiserver.stop()
	k.apiserver.argv = argv
	if err := k.StartAPIServer(); err != nil {
		return err
	}
	k.nodes = true
	return nil
}

// StopAPIServer stops kube-apiserver; etcd keeps the cluster's objects for StartAPIServer.
func (k *Kube) StopAPIServer() { k.apiserver.stop() }

// waitHTTPS polls an endpoint of the API server with the admin token until it answers 200.
func (k *Kube) waitHTTPS(p *process, url string, timeout time.Duration) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(k.CA)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("testserver: %s exited during startup:\n%s", p.name, p.logTail())
		default:
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+k.Token)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.stop()
	return fmt.Errorf("testserver: %s not ready at %s after %v:\n%s", p.name, url, timeout, p.logTail())
}

// Config is a client configuration for the admin user, with rate limits high enough for tests
// that create a thousand objects.
func (k *Kube) Config() *rest.Config {
	return &rest.Config{Host: k.URL, BearerToken: k.Token, TLSClientConfig: rest.TLSClientConfig{CAData: k.CA},
		QPS: 1000, Burst: 2000, Timeout: 30 * time.Second}
}

// Client is a clientset for the admin user.
func (k *Kube) Client() (kubernetes.Interface, error) { return kubernetes.NewForConfig(k.Config()) }

// Kubeconfig writes a kubeconfig file for the admin user and returns its path.
func (k *Kube) Kubeconfig() (string, error) { return k.kubeconfig("kubeconfig", k.URL) }

// kubeconfig writes a kubeconfig file for the admin user of the API server at url.
func (k *Kube) kubeconfig(name, url string) (string, error) {
	path := filepath.Join(k.Dir, name)
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
`, url, filepath.Join(k.Dir, "certs", "ca.crt"), k.Token)
	return path, os.WriteFile(path, []byte(cfg), 0o600)
}

// Extender is how kube-scheduler calls a scheduler extender.
type Extender struct {
	URL       string // http://127.0.0.1:PORT, or https:// with TLS
	Ignorable bool   // schedule without it when it cannot be reached
	Timeout   time.Duration
	// TLS, when CAFile is set: enableHTTPS with a tlsConfig that verifies the extender's
	// certificate against CAFile and, with CertFile and KeyFile, presents a client certificate.
	CAFile, CertFile, KeyFile string
}

// StartScheduler starts kube-scheduler with a KubeSchedulerConfiguration that scores every
// node (percentageOfNodesToScore 100, so the extender sees all feasible nodes) and calls ext
// for filter, prioritize and bind (no extender when ext.URL is empty). A running scheduler is
// stopped first.
func (k *Kube) StartScheduler(ext Extender) error {
	bin, err := tool("bin/kube-scheduler", "25-kube.sh")
	if err != nil {
		return err
	}
	k.StopScheduler()
	kubeconfig, err := k.Kubeconfig()
	if err != nil {
		return err
	}
	if ext.Timeout <= 0 {
		ext.Timeout = 5 * time.Second
	}
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
percentageOfNodesToScore: 100
`, kubeconfig)
	if ext.URL != "" {
		cfg += fmt.Sprintf(`extenders:
- urlPrefix: %s
  filterVerb: filter
  prioritizeVerb: prioritize
  bindVerb: bind
  weight: 1
  nodeCacheCapable: true
  ignorable: %t
  httpTimeout: %s
`, ext.URL, ext.Ignorable, ext.Timeout)
		if ext.CAFile != "" {
			cfg += fmt.Sprintf(`  enableHTTPS: true
  tlsConfig:
    caFile: %s
    certFile: %s
    keyFile: %s
`, ext.CAFile, ext.CertFile, ext.KeyFile)
		}
	}
	path := filepath.Join(k.Dir, "scheduler.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	k.scheduler = &process{name: "kube-scheduler", log: filepath.Join(k.Dir, "kube-scheduler.log"), argv: []string{bin,
		"--config", path, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--v", "2"}}
	if err := k.scheduler.start(); err != nil {
		return err
	}
	// /healthz is served on a self-signed certificate; the probe only needs the answer.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-k.scheduler.done:
			return fmt.Errorf("testserver: kube-scheduler exited during startup:\n%s", k.scheduler.logTail())
		default:
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	k.scheduler.stop()
	return fmt.Errorf("testserver: kube-scheduler not healthy after 60s:\n%s", k.scheduler.logTail())
}

// StopScheduler stops kube-scheduler, if running.
func (k *Kube) StopScheduler() {
	if k.scheduler != nil {
		k.scheduler.stop()
	}
}

// SchedulerLog is the tail of kube-scheduler's log, for failure messages.
func (k *Kube) SchedulerLog() string {
	if k.scheduler == nil {
		return ""
	}
	return k.scheduler.logTail()
}

// CreateNodes registers Node objects (with their status: capacity, allocatable) in parallel.
func (k *Kube) CreateNodes(ctx context.Context, nodes []*corev1.Node) error {
	client, err := k.Client()
	if err != nil {
		return err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	work := make(chan *corev1.Node)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("testserver: create node %s: %w", n.Name, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, n := range nodes {
		work <- n
	}
	close(work)
	wg.Wait()
	return first
}

// Close stops every process and removes the folder.
func (k *Kube) Close() {
	k.StopScheduler()
	k.apiserver.stop()
	k.etcd.stop()
	if os.Getenv("SCHEDRL_KEEP_KUBE") == "" {
		os.RemoveAll(k.Dir)
	}
}
