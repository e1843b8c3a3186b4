package testserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedrl/schedrl/internal/ociimage"
)

// PauseImage is the sandbox image every node imports (built from ./pause: no registry serves
// registry.k8s.io here); it is containerd 2.1's default name, pinned in its configuration.
const PauseImage = "registry.k8s.io/pause:3.10"

// Node is a node of the test cluster that runs containers: containerd 2.1 (overlayfs, runc,
// a CNI bridge), a kubelet registered with the API server and kube-proxy (iptables), in a
// network namespace of its own, with kube-controller-manager for Jobs, Deployments and the
// rest, and a small cluster DNS for Service names. Images come only from ImportImage. It needs
// root and the binaries of scripts/setup.d/26-node.sh; what this machine required of the
// configuration is in docs/results/2026-12-05-kubelet-spike.md and 2026-12-06-node-pods.md.
//
// The namespace is why several nodes (of several test binaries) can run at once: kube-proxy
// owns the KUBE-* chains of its network namespace's iptables and would delete another's. The
// node reaches the machine through a veth pair: the kubelet's address is the node end, the
// machine's end serves the cluster DNS, and pods reach the API server (the kubernetes Service,
// pointing at the machine's address) masqueraded by the bridge.
type Node struct {
	Name   string
	IP     string // the kubelet's address and the node's InternalIP (the node end of the veth pair)
	HostIP string // the machine's end of the veth pair: the pods' DNS server
	dir    string
	bin    string
	sock   string
	cgroup string // the kubelet's cgroup root, one per node
	bridge string
	netns  string
	veth   string // the machine's end

	containerd, kubelet, proxy, controllers *process
	dns                                     *clusterDNS
}

// StartNode starts a node named after a random suffix and waits until it is Ready. The first
// node restarts the API server to serve nodes (see enableNodes).
func (k *Kube) StartNode(ctx context.Context) (*Node, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("testserver: a node needs root (containerd, runc, cgroups, network namespaces)")
	}
	bin, err := tool("node/bin", "26-node.sh")
	if err != nil {
		return nil, err
	}
	if err := k.enableNodes(); err != nil {
		return nil, err
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	dir, err := os.MkdirTemp("", "schedrl-node-")
	if err != nil {
		return nil, err
	}
	// A /30 in 100.64.0.0/10 (shared address space, unused here) per node, from the suffix.
	link := net.IPv4(100, 64+suffix[0]&63, suffix[1], suffix[2]&0xfc)
	n := &Node{Name: "schedrl-node-" + id, dir: dir, bin: bin, sock: filepath.Join(dir, "containerd.sock"),
		cgroup: "schedrl-node-" + id, bridge: "schedrl" + id, netns: "schedrl-node-" + id, veth: "vh" + id,
		HostIP: addIP(link, 1).String(), IP: addIP(link, 2).String()}
	if err := n.start(ctx, k, suffix[0]); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

func addIP(ip net.IP, d byte) net.IP {
	out := slices.Clone(ip.To4())
	out[3] += d
	return out
}

// inNetns is argv run in the node's network namespace (nsenter execs it: the pid is argv's).
func (n *Node) inNetns(argv ...string) []string {
	return append([]string{"nsenter", "--net=/run/netns/" + n.netns, "--"}, argv...)
}

// setupNetwork makes the node's network namespace and the veth pair to it. Forwarding and
// br_netfilter are per namespace: kube-proxy's DNAT to a pod on the same bridge needs both.
func (n *Node) setupNetwork() error {
	nodeEnd := "vn" + strings.TrimPrefix(n.veth, "vh")
	steps := [][]string{
		{"ip", "netns", "add", n.netns},
		{"ip", "link", "add", n.veth, "type", "veth", "peer", "name", nodeEnd, "netns", n.netns},
		{"ip", "addr", "add", n.HostIP + "/30", "dev", n.veth},
		{"ip", "link", "set", n.veth, "up"},
		{"ip", "-n", n.netns, "link", "set", "lo", "up"},
		{"ip", "-n", n.netns, "addr", "add", n.IP + "/30", "dev", nodeEnd},
		{"ip", "-n", n.netns, "link", "set", nodeEnd, "up"},
		{"ip", "-n", n.netns, "route", "add", "default", "via", n.HostIP},
		n.inNetns("sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward && echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables"),
	}
	for _, argv := range steps {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("testserver: node network: %s: %w\n%s", strings.Join(argv, " "), err, out)
		}
	}
	return nil
}

func (n *Node) start(ctx context.Context, k *Kube, subnet byte) error {
	if err := n.setupNetwork(); err != nil {
		return err
	}
	if err := n.writeContainerdConfig(subnet); err != nil {
		return err
	}
	// The runc shim is found on PATH, and so are the iptables the CNI bridge and kube-proxy run.
	path := "PATH=" + n.bin + ":" + os.Getenv("PATH") + ":/usr/sbin:/sbin"
	n.containerd = &process{name: "containerd", log: filepath.Join(n.dir, "containerd.log"),
		argv: n.inNetns(filepath.Join(n.bin, "containerd"), "--config", filepath.Join(n.dir, "containerd.toml")),
		env:  []string{path}}
	if err := n.containerd.start(); err != nil {
		return err
	}
	if err := n.waitContainerd(ctx); err != nil {
		return err
	}
	pause, err := n.pauseArchive(ctx)
	if err != nil {
		return err
	}
	if err := n.ImportImage(ctx, pause); err != nil {
		return err
	}
	if err := n.makeCgroupRoot(); err != nil {
		return err
	}
	client, err := k.Client()
	if err != nil {
		return err
	}
	if n.dns, err = startDNS(net.JoinHostPort(n.HostIP, "53"), client); err != nil {
		return fmt.Errorf("testserver: cluster DNS: %w", err)
	}
	kubeconfig, err := k.Kubeconfig()
	if err != nil {
		return err
	}
	// In the node's namespace the API server is at the machine's address, not loopback.
	nodeKubeconfig, err := k.kubeconfig("kubeconfig-"+n.Name, "https://"+net.JoinHostPort(k.hostIP, strconv.Itoa(k.apiPort)))
	if err != nil {
		return err
	}
	kubeletConfig, err := n.writeKubeletConfig()
	if err != nil {
		return err
	}
	n.kubelet = &process{name: "kubelet", log: filepath.Join(n.dir, "kubelet.log"), env: []string{path},
		argv: n.inNetns(filepath.Join(n.bin, "kubelet"),
			"--config", kubeletConfig, "--kubeconfig", nodeKubeconfig, "--root-dir", filepath.Join(n.dir, "kubelet"),
			"--hostname-override", n.Name, "--node-ip", n.IP, "--v", "1")}
	if err := n.kubelet.start(); err != nil {
		return err
	}
	n.proxy = &process{name: "kube-proxy", log: filepath.Join(n.dir, "kube-proxy.log"), env: []string{path},
		argv: n.inNetns(filepath.Join(n.bin, "kube-proxy"), "--kubeconfig", nodeKubeconfig,
			"--hostname-override", n.Name, "--proxy-mode", "iptables", "--cluster-cidr", fmt.Sprintf("10.244.%d.0/24", subnet),
			// The conntrack table is the machine's, not kube-proxy's to size.
			"--conntrack-max-per-core", "0", "--metrics-bind-address", "127.0.0.1:10249", "--v", "1")}
	if err := n.proxy.start(); err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	c := func(name string) string { return filepath.Join(k.Dir, "certs", name) }
	n.controllers = &process{name: "kube-controller-manager", log: filepath.Join(n.dir, "kube-controller-manager.log"),
		argv: []string{filepath.Join(n.bin, "kube-controller-manager"), "--kubeconfig", kubeconfig,
			"--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
			"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port), "--leader-elect=false",
			// The CA goes to every namespace's kube-root-ca.crt, which the pods' projected
			// service account volume carries; the tokens themselves are the kubelet's (TokenRequest).
			"--root-ca-file", c("ca.crt"), "--use-service-account-credentials=false",
			// Pods get addresses from CNI. The test nodes without a kubelet (Node objects only)
			// never report: node-lifecycle would taint them unreachable and evict their pods.
			"--controllers", "*,-serviceaccount-token-controller,-node-ipam-controller,-node-lifecycle-controller",
			"--v", "1"}}
	if err := n.controllers.start(); err != nil {
		return err
	}
	return n.waitReady(ctx, k)
}

// nodeIP is the machine's address: the first non-loopback IPv4 address of an interface that
// is up and not the machine's end of a node's veth pair.
func nodeIP() (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 || strings.HasPrefix(i.Name, "vh") {
			continue
		}
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", errors.New("testserver: no non-loopback IPv4 address for the kubelet")
}

func (n *Node) writeContainerdConfig(subnet byte) error {
	cni := filepath.Join(n.dir, "cni")
	if err := os.MkdirAll(cni, 0o755); err != nil {
		return err
	}
	conflist := fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "%s", "plugins": [
  {"type": "bridge", "bridge": "%s", "isGateway": true, "ipMasq": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.%d.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": "%s"}},
  {"type": "loopback"}]}
`, n.bridge, n.bridge, subnet, filepath.Join(n.dir, "ipam"))
	if err := os.WriteFile(filepath.Join(cni, "10-schedrl.conflist"), []byte(conflist), 0o644); err != nil {
		return err
	}
	// restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE, so runc cannot give the sandbox
	// containerd's -998. Network namespaces under the state folder, so Close finds them.
	cfg := fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %[5]q
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %[6]q
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%[7]q]
    conf_dir = %[8]q
`, filepath.Join(n.dir, "containerd"), filepath.Join(n.dir, "state"), n.sock, n.sock+".ttrpc", PauseImage,
		filepath.Join(n.bin, "runc"), filepath.Join(n.bin, "cni"), cni)
	return os.WriteFile(filepath.Join(n.dir, "containerd.toml"), []byte(cfg), 0o644)
}

func (n *Node) waitContainerd(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		if err := n.ctr(ctx, "version"); err == nil {
			return nil
		}
		select {
		case <-n.containerd.done:
			return fmt.Errorf("testserver: containerd exited during startup:\n%s", n.containerd.logTail())
		case <-ctx.Done():
			return fmt.Errorf("testserver: containerd not serving after 60s:\n%s", n.containerd.logTail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ctr runs containerd's client on the node's socket, in the kubelet's namespace.
func (n *Node) ctr(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(n.bin, "ctr"), append([]string{"--address", n.sock, "--namespace", "k8s.io"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// ImportImage imports an image archive (an OCI layout or Docker tarball, such as `make image`
// writes) into the node's containerd, under the names it carries.
func (n *Node) ImportImage(ctx context.Context, archive string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return n.ctr(ctx, "images", "import", archive)
}

// pauseArchive builds ./pause statically and packs it as PauseImage.
func (n *Node) pauseArchive(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	exe := filepath.Join(n.dir, "pause")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", exe, "github.com/schedrl/schedrl/internal/testserver/pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testserver: build the pause binary: %w\n%s", err, out)
	}
	archive := filepath.Join(n.dir, "pause.oci.tar")
	return archive, binaryImage(n.dir, "pause", exe, "/pause", PauseImage, archive, v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"})
}

// binaryImage writes an image archive of one static binary at path in the image.
func binaryImage(dir, name, exe, path, ref, archive string, cfg v1.Config) error {
	epoch := time.Unix(0, 0)
	layer, err := ociimage.WriteLayer(dir, ociimage.LayerSpec{Name: name,
		Files: []ociimage.File{{Path: path, Source: exe, Mode: 0o755}}}, epoch)
	if err != nil {
		return err
	}
	img, err := ociimage.Image([]v1.Layer{layer}, []string{name}, cfg, epoch)
	if err != nil {
		return err
	}
	return ociimage.WriteArchive(archive, img, ref, epoch)
}

// ImportKubeScheduler imports kube-scheduler (setup's static build) as the image
// deploy/k8s/scheduler.yaml names, registry.k8s.io/kube-scheduler:VERSION with the binary's
// own version (no registry is reachable here), and returns its reference.
func (n *Node) ImportKubeScheduler(ctx context.Context) (string, error) {
	exe, err := tool("bin/kube-scheduler", "25-kube.sh")
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, exe, "--version").Output()
	version, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "Kubernetes ")
	if err != nil || !ok {
		return "", fmt.Errorf("testserver: kube-scheduler --version: %v %q", err, out)
	}
	ref := "registry.k8s.io/kube-scheduler:" + version
	archive := filepath.Join(n.dir, "kube-scheduler.oci.tar")
	if err := binaryImage(n.dir, "kube-scheduler", exe, "/usr/local/bin/kube-scheduler", ref, archive,
		v1.Config{Entrypoint: []string{"/usr/local/bin/kube-scheduler"}, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, User: "65532:65532"}); err != nil {
		return "", err
	}
	return ref, n.ImportImage(ctx, archive)
}

// cgroupHierarchies are the mounted cgroup v1 hierarchies (not the unified one, whose
// controllers this machine leaves in v1).
func cgroupHierarchies() ([]string, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == "cgroup" {
			out = append(out, fields[1])
		}
	}
	return out, sc.Err()
}

// makeCgroupRoot creates the kubelet's cgroup root in every hierarchy, which the kubelet
// requires and does not create; a cpuset needs its CPUs and memory nodes before use.
func (n *Node) makeCgroupRoot() error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		p := filepath.Join(h, n.cgroup)
		if err := os.Mkdir(p, 0o755); err != nil {
			return fmt.Errorf("testserver: cgroup root: %w", err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(p, f), v, 0o644); err != nil {
					return fmt.Errorf("testserver: cgroup root %s: %w", f, err)
				}
			}
		}
	}
	return nil
}

func (n *Node) writeKubeletConfig() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	healthz, err := FreePort()
	if err != nil {
		return "", err
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /%s
failCgroupV1: false
failSwapOn: false
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://%s
imageServiceEndpoint: unix://%s
podLogsDir: %s
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
resolvConf: /etc/resolv.conf
clusterDNS: [%s]
clusterDomain: %s
`, n.cgroup, n.IP, port, healthz, n.sock, n.sock, filepath.Join(n.dir, "pods"), n.HostIP, ClusterDomain)
	path := filepath.Join(n.dir, "kubelet.yaml")
	return path, os.WriteFile(path, []byte(cfg), 0o644)
}

func (n *Node) waitReady(ctx context.Context, k *Kube) error {
	client, err := k.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		if node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); err == nil {
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		select {
		case <-n.kubelet.done:
			return fmt.Errorf("testserver: kubelet exited during startup:\n%s", n.kubelet.logTail())
		case <-ctx.Done():
			return fmt.Errorf("testserver: node %s not Ready after 3 minutes:\n%s", n.Name, n.kubelet.logTail())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Close stops the node and removes everything it made: containers (containerd leaves them
// and their shims running when it stops), mounts, the cgroup root, the bridge, the folder.
func (n *Node) Close() {
	for _, p := range []*process{n.controllers, n.proxy, n.kubelet} {
		if p != nil {
			p.stop()
		}
	}
	n.killContainers()
	if n.containerd != nil {
		n.containerd.stop()
	}
	n.killShims()
	unmountUnder(n.dir)
	n.removeCgroupRoot()
	if n.dns != nil {
		n.dns.close()
	}
	// The namespace takes the bridge, the veth pair and kube-proxy's rules with it.
	exec.Command("ip", "netns", "del", n.netns).Run()
	if os.Getenv("SCHEDRL_KEEP_KUBE") == "" {
		os.RemoveAll(n.dir)
	}
}

// killContainers kills every process in the node's cgroup root (the pods' processes).
func (n *Node) killContainers() {
	hs, _ := cgroupHierarchies()
	for _, h := range hs {
		if filepath.Base(h) != "pids" {
			continue
		}
		filepath.WalkDir(filepath.Join(h, n.cgroup), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return nil
		})
	}
}

// killShims kills the runc shims this node's containerd started: they name its socket.
func (n *Node) killShims() {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), "containerd-shim") && strings.Contains(string(cmdline), n.sock) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// unmountUnder detaches every mount below dir (overlay roots, pod volumes, network
// namespaces), deepest first.
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mounts []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			mounts = append(mounts, fields[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		syscall.Unmount(m, syscall.MNT_DETACH)
	}
}

func (n *Node) removeCgroupRoot() {
	hs, _ := cgroupHierarchies()
	for _, h := range hs {
		var dirs []string
		filepath.WalkDir(filepath.Join(h, n.cgroup), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			os.Remove(d)
		}
	}
}

// KubeletLog is the end of the kubelet's log, for test failures.
func (n *Node) KubeletLog() string { return n.kubelet.logTail() }
