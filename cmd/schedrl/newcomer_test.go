package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// `schedrl finetune plot DIR` plots the run DIR, labelled by its folder name, beside --run's.
func TestFinetunePlotTakesADir(t *testing.T) {
	var got *finetunePlotOptions
	cmd := newFinetunePlotCmd(func(_ context.Context, o *finetunePlotOptions) error {
		got = o
		return nil
	})
	cmd.SetArgs([]string{"runs/finetune/", "--run", "scratch=runs/finetune-scratch"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"finetune=runs/finetune/", "scratch=runs/finetune-scratch"}; !slices.Equal(got.Runs, want) {
		t.Fatalf("runs %q, want %q", got.Runs, want)
	}
}

// Through the whole binary, DIR reaches the run reader: the error is about the run, not the
// command line.
func TestFinetunePlotDirReachesTheRun(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	code := execute(newRootCmd(), []string{"finetune", "plot", dir, "--out", filepath.Join(dir, "p.png")}, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "no finetune checkpoint") {
		t.Fatalf("exit %d, stderr %q: want the run's own error (no finetune checkpoint)", code, stderr.String())
	}
	stderr.Reset()
	if code := execute(newRootCmd(), []string{"finetune", "plot"}, &stderr); code == 0 || !strings.Contains(stderr.String(), "DIR or --run") {
		t.Fatalf("no run: exit %d, stderr %q", code, stderr.String())
	}
}

// defrag online reports the simulated time it reached on stderr, and --json's stdout stays
// one JSON document.
func TestDefragOnlineProgressOnStderr(t *testing.T) {
	var out, errb bytes.Buffer
	o := onlineOptions("make-room")
	o.Out, o.Err = &out, &errb
	if err := runDefragOnline(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out.String())
	}
	if s := errb.String(); !strings.Contains(s, "progress") || !strings.Contains(s, "simulated s") {
		t.Fatalf("no progress on stderr: %q", s)
	}
}

// maifs-bc reports its expert runs, then its epochs, on stderr.
func TestMAIFSBCProgressOnStderr(t *testing.T) {
	var errb bytes.Buffer
	maifsBC(t, func(o *maifsOptions) { o.Err = &errb })
	if s := errb.String(); !strings.Contains(s, "expert runs") || !strings.Contains(s, "epochs") {
		t.Fatalf("no progress on stderr: %q", s)
	}
}

// Every repository file a command's help names (data/..., configs/..., scripts/...) exists:
// a newcomer copies the examples.
func TestHelpNamesFilesThatExist(t *testing.T) {
	repo := filepath.Join("..", "..")
	path := regexp.MustCompile(`(?:^|[\s='"])((?:data|configs|scripts|deploy)/[A-Za-z0-9_./-]+)`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		text := c.Long + "\n" + c.Example
		c.Flags().VisitAll(func(f *pflag.Flag) { text += "\n" + f.Usage + " " + f.DefValue })
		for _, m := range path.FindAllStringSubmatch(text, -1) {
			p := strings.TrimRight(m[1], ".,")
			if strings.ContainsAny(p, "*{") {
				continue
			}
			if _, err := os.Stat(filepath.Join(repo, p)); err != nil {
				t.Errorf("%s: help names %s, which the repository does not have", c.CommandPath(), p)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}

// Every runs/ folder an example reads is one that an example (or a config's out) writes: the
// examples chain into a path a newcomer can follow.
func TestHelpExamplesReadWhatExamplesWrite(t *testing.T) {
	written := map[string]bool{}
	outs := regexp.MustCompile(`(?m)^\s+(?:out|dir):\s*(runs/\S+)`)
	files, _ := filepath.Glob(filepath.Join("..", "..", "configs", "*.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range outs.FindAllStringSubmatch(string(data), -1) {
			written[m[1]] = true
		}
	}
	type use struct{ cmd, path string }
	var reads []use
	runs := regexp.MustCompile(`runs/[A-Za-z0-9_./*-]+`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, line := range strings.Split(c.Example, "\n") {
			fields := strings.Fields(line)
			for i, f := range fields {
				f = strings.Trim(f, `'"`)
				if i > 0 && slices.Contains([]string{"--out", "--log-dir", "--to", "--demos"}, fields[i-1]) {
					written[f] = true
					continue
				}
				for _, p := range runs.FindAllString(f, -1) {
					reads = append(reads, use{c.CommandPath(), p})
				}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	for _, r := range reads {
		p := r.path
		if i := strings.IndexByte(p, '*'); i >= 0 {
			p = filepath.Dir(p[:i])
		}
		ok := false
		for q := filepath.Clean(p); q != "." && q != "/"; q = filepath.Dir(q) {
			ok = ok || written[q]
		}
		if !ok {
			t.Errorf("%s: its example reads %s, which no example writes", r.cmd, r.path)
		}
	}
}

// scripts/readme-walk.sh knows what to do with every command of README.md, and refuses a
// README with a command its plan neither runs nor skips.
func TestReadmeWalkCoversEveryCommand(t *testing.T) {
	script := filepath.Join("..", "..", "scripts", "readme-walk.sh")
	if out, err := exec.Command("bash", script, "--check").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	extra := filepath.Join(t.TempDir(), "README.md")
	added := string(readme) + "\n```sh\nbin/schedrl sim --policy bestfit --seeds 7\n```\n"
	if err := os.WriteFile(extra, []byte(added), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script, "--check")
	cmd.Env = append(os.Environ(), "README="+extra)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "bin/schedrl sim --policy bestfit --seeds 7") {
		t.Fatalf("a README command the plan does not name passed the check: %v\n%s", err, out)
	}
}

// The binary run from another folder finds the data its defaults name beside itself (here
// bin/schedrl with data/ in the folder above, as in a checkout).
func TestBinaryFromElsewhereFindsItsData(t *testing.T) {
	tree := t.TempDir()
	bin := filepath.Join(tree, "bin", "schedrl")
	if err := os.Mkdir(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(os.Args[0], bin); err != nil {
		data, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := filepath.Abs(filepath.Join(repoRoot, "data"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(data, filepath.Join(tree, "data")); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	for _, args := range [][]string{
		{"sim", "--policy", "fgd", "--seeds", "42", "--log-dir", "logs"},
		{"defrag", "online", "--pods", filepath.Join(data, "openb", "openb_pod_list_default.csv"), "--load", "1.1",
			"--seed", "3", "--method", "make-room", "--duration", "3600", "--warmup", "600", "--json"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = elsewhere
		cmd.Env = append(os.Environ(), "SCHEDRL_TEST_AS_CLI=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("schedrl %s from %s: %v\n%s", strings.Join(args, " "), elsewhere, err, out)
		}
	}
}

// A command that fails on a default repository file, from a folder with no checkout in reach,
// says which key to set.
func TestMissingRepoFileNamesTheKey(t *testing.T) {
	t.Chdir(t.TempDir())
	var stderr bytes.Buffer
	root := newRootCmd()
	root.SetOut(io.Discard)
	code := execute(root, []string{"sim", "--policy", "fgd", "--seeds", "42"}, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "--set sim.nodes=PATH") {
		t.Fatalf("exit %d, stderr %q: want the key to set", code, stderr.String())
	}
}
