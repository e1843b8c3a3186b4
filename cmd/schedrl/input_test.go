package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
)

// inProcess runs `schedrl ARGS...` through execute, as main does; it returns the exit status
// and everything printed.
func inProcess(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&out)
	code := execute(root, args, &out)
	return code, out.String()
}

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Bad input of issue 26 (cases 4, 6-14): a non-zero exit before any work, with a one-line
// error that says what is wrong, and nothing created.
func TestBadInputSaysWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	nodes, pods := repotest.OpenbNodes(), repotest.OpenbPods("default")
	sim := []string{"sim", "--nodes", nodes, "--pods", pods, "--policy", "fgd"}
	dataset := filepath.Dir(writeFile(t, filepath.Join(dir, "ds", "manifest.json"), `{"schema_version":"transitions-v1"}`))
	ckpt := filepath.Dir(writeFile(t, filepath.Join(dir, "ck", "manifest.json"), `{"format":1,"model":"m"}`))
	cpuNodes := writeFile(t, filepath.Join(dir, "cpu.csv"), "sn,cpu_milli,memory_mib,gpu,model\nn1,96000,786432,0,\n")
	binary := writeFile(t, filepath.Join(dir, "bin.csv"), "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	missing := filepath.Join(dir, "nonexistent", "dir")
	cases := []struct {
		issue int
		args  []string
		want  string
	}{
		{4, []string{"registry", "list", "--store", "file://" + filepath.Join(dir, "nostore")}, filepath.Join(dir, "nostore") + " does not exist"},
		{6, append(sim, "--out", dir), "--out names a file, but " + dir + " is a directory"},
		{7, []string{"datasets", "inspect", ckpt}, ckpt + " is a checkpoint, not a dataset"},
		{7, []string{"defrag", "plan", "--snapshot", "s.json", "--out", filepath.Join(dir, "p.json"), "--model", dataset}, dataset + " is a dataset, not a checkpoint"},
		{8, []string{"sim", "--nodes", binary, "--pods", pods, "--policy", "fgd"}, binary + ": not a text file"},
		{9, []string{"sim", "--nodes", cpuNodes, "--pods", pods, "--policy", "fgd"}, cpuNodes + ": no node has a GPU"},
		{12, append(sim, "--seeds", "1-2", "--workers", "-2"), `invalid argument "-2" for "--workers" flag: must be >= 0`},
		{12, []string{"doctor", "--timeout", "-1s"}, `invalid argument "-1s" for "--timeout" flag: must be > 0`},
		{13, []string{"registry", "publish", filepath.Join(dir, "typo"), "--model", "m", "--store", "file://" + dir}, filepath.Join(dir, "typo") + " does not exist"},
		{14, append(sim, "--out", filepath.Join(missing, "curve.csv")), "folder " + missing + " does not exist"},
		{14, []string{"datasets", "build", "--logs", "x", "--out", filepath.Join(missing, "ds")}, "folder " + missing + " does not exist"},
	}
	for _, c := range cases {
		code, out := inProcess(t, c.args...)
		if code != 1 || !strings.Contains(out, c.want) || strings.Count(strings.TrimSpace(out), "\n") > 0 {
			t.Errorf("case %d: schedrl %s: exit %d, want 1 and one line with %q:\n%s", c.issue, strings.Join(c.args, " "), code, c.want, out)
		}
	}
	for _, p := range []string{filepath.Join(dir, "nostore"), filepath.Join(dir, "nonexistent"), filepath.Join(dir, "p.json")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s was created", p)
		}
	}
}

// Issue 26 cases 10 and 11: environment variables and list values.
func TestEnvAndListValues(t *testing.T) {
	code, out := inProcess(t, "config", "show", "--set", "eval.policies=[fgd,bestfit]")
	if code != 0 || !strings.Contains(out, "    - fgd\n    - bestfit\n") {
		t.Errorf("--set eval.policies=[fgd,bestfit]: exit %d:\n%s", code, out)
	}
	t.Setenv("SCHEDRL_EVAL_TRACE", "default")
	code, out = inProcess(t, "config", "show")
	if code != 1 || !strings.Contains(out, "env SCHEDRL_EVAL_TRACE names no config key (did you mean SCHEDRL_EVAL_TRACES?)") {
		t.Errorf("misspelled env: exit %d:\n%s", code, out)
	}
}
