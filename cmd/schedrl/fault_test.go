package main

// The fault-injection suite of issue 26: commands interrupted at random (seeded) points leave
// nothing half-written and a rerun completes; concurrent writers to one output folder; silent
// and cut-off S3 and MLflow endpoints behind the registry commands.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/syncbuf"
	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/registry"
)

// faultSeed draws the points at which the suite interrupts commands.
const faultSeed = 26

// process is a schedrl command running as a real process in the repository root.
type process struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr syncbuf.Buffer
}

func startSchedrl(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(os.Args[0], args...)}
	p.cmd.Dir = repoRoot
	p.cmd.Env = append(append(os.Environ(), "SCHEDRL_TEST_AS_CLI=1"), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// wait returns the exit status.
func (p *process) wait() int {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func runSchedrl(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	p := startSchedrl(t, env, args...)
	if code := p.wait(); code != 0 {
		t.Fatalf("schedrl %s: exit %d\n%s%s", strings.Join(args, " "), code, p.stdout.String(), p.stderr.String())
	}
	return p
}

// noTemps fails the test when a temporary of atomicfile is left anywhere under dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && atomicfile.IsTemp(path) {
			t.Errorf("left behind: %s", path)
		}
		return nil
	})
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// interruptible is a command of the suite: args writes out; busy says that it is under way
// (it has started writing); check verifies what is there (complete: the command finished).
type interruptible struct {
	name   string
	window time.Duration // signals land uniformly in [0, window) after busy
	args   func(out string) []string
	busy   func(out string) bool
	check  func(t *testing.T, out string, complete bool)
}

// interruptAndRerun interrupts c with SIGINT and with SIGTERM at seeded random points, checks
// the exit status (130 or 143 and "interrupted" said once, or 0 when it finished first) and
// that nothing is half-written, then reruns it to completion.
func interruptAndRerun(t *testing.T, rng *rand.Rand, dir string, c interruptible) []string {
	var outs []string
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		out := filepath.Join(dir, c.name+"-"+strings.ToLower(sig.String()[:3]))
		delay := time.Duration(rng.Int64N(int64(c.window)))
		p := startSchedrl(t, nil, c.args(out)...)
		done := make(chan int, 1)
		go func() { done <- p.wait() }()
		code := -1
	poll:
		for !c.busy(out) {
			select {
			case code = <-done:
				break poll
			case <-time.After(10 * time.Millisecond):
			}
		}
		if code < 0 {
			time.Sleep(delay)
			p.cmd.Process.Signal(sig)
			code = <-done
		}
		t.Logf("%s: %v %v after it got busy: exit %d", c.name, sig, delay, code)
		switch code {
		case 0:
		case 128 + int(sig):
			if n := strings.Count(p.stderr.String(), "interrupted"); n != 1 {
				t.Errorf("%s: %v: says interrupted %d times:\n%s", c.name, sig, n, p.stderr.String())
			}
		default:
			t.Errorf("%s: %v: exit %d, want %d\n%s", c.name, sig, code, 128+int(sig), p.stderr.String())
		}
		noTemps(t, dir)
		if exists(out) {
			c.check(t, out, code == 0)
		}
		runSchedrl(t, nil, c.args(out)...)
		noTemps(t, dir)
		c.check(t, out, true)
		outs = append(outs, out)
	}
	return outs
}

func TestInterruptedCommandsLeaveNothingHalfWritten(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(faultSeed, 0))
	smoke := []string{"--config", "configs/smoke.yaml"}

	logDirs := interruptAndRerun(t, rng, dir, interruptible{
		name: "sim", window: 400 * time.Millisecond,
		args: func(out string) []string {
			// --force: the rerun replaces the interrupted batch's set, which is marked incomplete.
			return append([]string{"sim", "--policy", "fgd", "--seeds", "1-8", "--workers", "1", "--log-dir", out, "--force"}, smoke...)
		},
		busy: func(out string) bool { return exists(out) },
		check: func(t *testing.T, out string, complete bool) {
			if complete && exists(filepath.Join(out, atomicfile.IncompleteName(""))) {
				t.Errorf("%s: a finished batch is marked incomplete", out)
			}
			logs, _ := filepath.Glob(filepath.Join(out, "*.jsonl"))
			for _, l := range logs {
				if data, err := os.ReadFile(l); err != nil || !bytes.HasSuffix(data, []byte("\n")) || bytes.Count(data, []byte("\n")) < 2 {
					t.Errorf("incomplete log %s", l)
				}
			}
			if complete && len(logs) != 8 {
				t.Errorf("%s: %d logs, want 8", out, len(logs))
			}
		},
	})

	dsDirs := interruptAndRerun(t, rng, dir, interruptible{
		name: "datasets", window: 300 * time.Millisecond,
		args: func(out string) []string {
			return append([]string{"datasets", "build", "--logs", filepath.Join(logDirs[0], "*.jsonl"), "--workers", "1", "--out", out, "--force"}, smoke...)
		},
		busy: func(out string) bool {
			tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*"))
			return len(tmp) > 0
		},
		check: func(t *testing.T, out string, _ bool) {
			if _, err := datasets.Inspect(out); err != nil {
				t.Errorf("dataset %s: %v", out, err)
			}
		},
	})

	interruptAndRerun(t, rng, dir, interruptible{
		name: "pretrain", window: time.Second,
		busy: func(out string) bool { return exists(out) },
		args: func(out string) []string {
			return append([]string{"pretrain", "--data", dsDirs[0], "--out", out, "--set", "pretrain.max_steps=400",
				"--set", "pretrain.batch_size=8", "--set", "pretrain.checkpoint_every=50", "--set", "pretrain.val_max_samples=20"}, smoke...)
		},
		check: func(t *testing.T, out string, complete bool) {
			if _, err := checkpoint.Read(out); complete && err != nil {
				t.Errorf("checkpoint %s: %v", out, err)
			}
		},
	})

	// A checkpoint big enough (128 MiB) that a publish takes a while to copy.
	big := filepath.Join(dir, "big")
	if err := os.MkdirAll(big, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(big, checkpoint.ModelFile), bytes.Repeat([]byte("weights!"), 16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Write(big, checkpoint.Manifest{Model: "m", Env: "placement", FeatureVersion: 1, Created: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	interruptAndRerun(t, rng, dir, interruptible{
		name: "publish", window: 60 * time.Millisecond,
		busy: func(out string) bool { return exists(out) },
		args: func(out string) []string {
			return []string{"registry", "publish", big, "--model", "fault", "--store", "file://" + out}
		},
		check: func(t *testing.T, out string, complete bool) {
			cfg := config.Default().Registry
			cfg.Store = "file://" + out
			r, err := registry.Open(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			versions, err := r.Versions(context.Background(), "fault")
			if err != nil && !errors.Is(err, registry.ErrNoStore) {
				t.Fatal(err)
			}
			for _, v := range versions {
				if _, err := r.Pull(context.Background(), v.Ref(), filepath.Join(t.TempDir(), "p"), false); err != nil {
					t.Errorf("version %s: %v", v.Ref(), err)
				}
			}
			if complete && len(versions) != 1 {
				t.Errorf("%d versions after a complete publish, want 1", len(versions))
			}
		},
	})
}

// Issue 26 case 2: an interrupted batch prints the runs that finished (--json) and every one
// of them has its log.
func TestInterruptedSimBatchPrintsFinishedRuns(t *testing.T) {
	logs := filepath.Join(t.TempDir(), "logs")
	p := startSchedrl(t, nil, "sim", "--config", "configs/smoke.yaml", "--policy", "fgd", "--seeds", "1-40",
		"--workers", "1", "--log-dir", logs, "--json")
	deadline := time.Now().Add(time.Minute)
	for {
		if done, _ := filepath.Glob(filepath.Join(logs, "*.jsonl")); len(done) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, p.stderr.String())
	}
	sc := bufio.NewScanner(&p.stdout)
	printed := 0
	for sc.Scan() {
		var s simSummary
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		if !exists(s.Log) {
			t.Errorf("printed run %d has no log %s", s.Seed, s.Log)
		}
		printed++
	}
	files, _ := filepath.Glob(filepath.Join(logs, "*.jsonl"))
	if printed < 2 || printed != len(files) {
		t.Errorf("%d runs printed, %d logs in %s", printed, len(files), logs)
	}
	// The batch's set of logs is marked incomplete (issue 34), so no reader takes it whole.
	if !exists(filepath.Join(logs, atomicfile.IncompleteName(""))) {
		t.Errorf("%s is not marked incomplete", logs)
	}
	noTemps(t, logs)
}

// Issue 26 case 3: an interrupted eval exits 130 (SIGINT) or 143 (SIGTERM), says
// "interrupted" once and not "context canceled", and leaves no report folder.
func TestInterruptedEval(t *testing.T) {
	dir := t.TempDir()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		out := filepath.Join(dir, "eval-"+sig.String()[:3])
		p := startSchedrl(t, nil, "eval", "--config", "configs/smoke.yaml", "--policies", "fgd", "--seeds", "49-80",
			"--parallelism", "1", "--out", out)
		// Signal once a run has finished (a line per run): earlier, a slow start under load
		// may not have installed the handlers yet, and the default action kills it.
		deadline := time.Now().Add(2 * time.Minute)
		for !strings.Contains(p.stderr.String(), "run done") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		p.cmd.Process.Signal(sig)
		code := p.wait()
		stderr := p.stderr.String()
		if code != 128+int(sig) || strings.Count(stderr, "interrupted") != 1 || strings.Contains(stderr, "context canceled") {
			t.Errorf("%v: exit %d, want %d; stderr:\n%s", sig, code, 128+int(sig), stderr)
		}
		if exists(out) {
			t.Errorf("%v: report folder %s exists", sig, out)
		}
	}
	noTemps(t, dir)
}

// Issue 26 case 5: 8 concurrent `datasets build` to one --out: exactly one wins, the others
// fail saying the folder exists.
func TestConcurrentWritersOneWins(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	runSchedrl(t, nil, "sim", "--config", "configs/smoke.yaml", "--policy", "fgd", "--seeds", "1-2", "--log-dir", logs)
	out := filepath.Join(dir, "ds")
	const writers = 8
	procs := make([]*process, writers)
	for i := range procs {
		procs[i] = startSchedrl(t, nil, "datasets", "build", "--config", "configs/smoke.yaml", "--logs", filepath.Join(logs, "*.jsonl"),
			"--workers", "1", "--out", out)
	}
	var mu sync.Mutex
	won := 0
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := p.wait()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case code == 0:
				won++
			case code != 1 || !strings.Contains(p.stderr.String(), out+" already exists"):
				t.Errorf("loser: exit %d:\n%s", code, p.stderr.String())
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d writers succeeded, want exactly 1", won)
	}
	if _, err := datasets.Inspect(out); err != nil {
		t.Fatal(err)
	}
	noTemps(t, dir)
}

// Issue 26 case 1: registry commands against a silent S3 endpoint, a silent MLflow server and
// an endpoint that breaks off its answer fail (or, for the MLflow mirror, warn) within their
// deadlines, naming the endpoint and the operation.
func TestRegistryAgainstFaultyEndpoints(t *testing.T) {
	silent, err := testserver.StartSilent()
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	cut, err := testserver.StartCutOff()
	if err != nil {
		t.Fatal(err)
	}
	defer cut.Close()
	keys := []string{"SCHEDRL_REGISTRY_S3_ACCESS_KEY=ak", "SCHEDRL_REGISTRY_S3_SECRET_KEY=sk"}
	s3 := func(addr string, extra ...string) []string {
		return append([]string{"registry", "list", "--store", "s3://bucket/team", "--set", "registry.s3.endpoint=" + addr,
			"--set", "registry.s3.timeout=500ms", "--set", "registry.s3.retries=1", "--set", "registry.s3.backoff=10ms"}, extra...)
	}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"silent s3", s3(silent.Addr), []string{"s3 list", "endpoint " + silent.Addr, "no progress within 500ms", "not retried"}},
		{"cut-off s3", s3(cut.Addr), []string{"s3 list", "endpoint " + cut.Addr}},
		{"command deadline", s3(silent.Addr, "--set", "registry.s3.timeout=1m", "--set", "registry.deadline=1s"),
			[]string{"s3 list", "registry command did not finish within registry.deadline 1s"}},
	} {
		start := time.Now()
		p := startSchedrl(t, keys, c.args...)
		code := p.wait()
		t.Logf("%s: exit %d after %v", c.name, code, time.Since(start).Round(time.Millisecond))
		for _, w := range c.want {
			if code != 1 || !strings.Contains(p.stderr.String(), w) {
				t.Errorf("%s: exit %d, want 1 and %q:\n%s", c.name, code, w, p.stderr.String())
			}
		}
	}

	// A silent MLflow mirror does not hold up a publish: the version is in the store, the
	// warning names the server, and `registry sync` fails naming it.
	store := "file://" + t.TempDir()
	mlflow := []string{"--store", store, "--set", "registry.tracking.uri=http://" + silent.Addr,
		"--set", "registry.tracking.timeout=500ms", "--set", "registry.tracking.retries=0"}
	p := runSchedrl(t, nil, append([]string{"registry", "publish", registryFixture(t, 5), "--model", "m"}, mlflow...)...)
	if !strings.Contains(p.stdout.String(), "published m@1") || !strings.Contains(p.stderr.String(), "http://"+silent.Addr) {
		t.Errorf("publish with a silent mirror:\n%s%s", p.stdout.String(), p.stderr.String())
	}
	p = startSchedrl(t, nil, append([]string{"registry", "sync"}, mlflow...)...)
	if code := p.wait(); code != 1 || !strings.Contains(p.stderr.String(), "at http://"+silent.Addr+": no answer within 500ms") {
		t.Errorf("sync with a silent mirror: exit %d:\n%s", code, p.stderr.String())
	}
}
