// Package testserver starts real MinIO and MLflow servers and a Kubernetes control plane (etcd,
// kube-apiserver, kube-scheduler) for tests, as separate programs on free 127.0.0.1 ports with
// data in temporary folders. The binaries come from the git-ignored .deps folder that
// `make setup` fills (scripts/setup.d/20-minio.sh, 25-kube.sh, 30-mlflow.sh). A server
// that cannot start is an error, never a skip: start servers in TestMain and exit non-zero.
//
// Servers can be stopped and restarted on the same port and data, for fault tests.
package testserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// DepsDir is the folder with the setup's installs: $SCHEDRL_DEPS, else .deps in the module root
// found above the working directory.
func DepsDir() (string, error) {
	if d := os.Getenv("SCHEDRL_DEPS"); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".deps"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testserver: no go.mod above the working directory; set SCHEDRL_DEPS")
		}
		dir = parent
	}
}

// tool returns the path of an installed tool under the deps folder, or an error saying how to
// install it.
func tool(rel, setup string) (string, error) {
	deps, err := DepsDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(deps, rel)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("testserver: %s is missing: run `make setup` (scripts/setup.d/%s)", p, setup)
	}
	return p, nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// randomKey is a fresh credential per server, so tests can grep outputs for it.
func randomKey(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// process is one server program in its own process group (so its workers stop with it).
type process struct {
	name string
	argv []string
	env  []string
	log  string // stdout+stderr go here
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *process) start() error {
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group to stop workers with the server; killed if the test binary dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("testserver: start %s: %w", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return nil
}

// waitHTTP polls url until it answers 200, the process exits, or timeout passes.
func (p *process) waitHTTP(url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("testserver: %s exited during startup:\n%s", p.name, p.logTail())
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
	p.stop()
	return fmt.Errorf("testserver: %s not ready at %s after %v:\n%s", p.name, url, timeout, p.logTail())
}

// stop ends the process group: SIGINT (gunicorn's quick shutdown; SIGTERM waits for
// requests), then SIGKILL after 3 s.
func (p *process) stop() {
	if p.cmd == nil {
		return
	}
	select {
	case <-p.done:
		p.cmd = nil
		return
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	p.cmd = nil
}

func (p *process) logTail() string {
	data, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// waitPortFree waits until nothing listens on addr, so a restart can bind it again.
func waitPortFree(ctx context.Context, addr string) {
	for ctx.Err() == nil {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(50 * time.Millisecond)
	}
}
