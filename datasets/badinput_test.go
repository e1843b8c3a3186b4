package datasets

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lines splits a log into its lines (without newlines).
func lines(log []byte) []string { return strings.Split(strings.TrimRight(string(log), "\n"), "\n") }

func join(ls []string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

// lineOf is the 1-based number of the first line containing all parts.
func lineOf(t *testing.T, ls []string, parts ...string) int {
	t.Helper()
	for i, l := range ls {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return i + 1
		}
	}
	t.Fatalf("no line contains %q", parts)
	return 0
}

// TestBuildRejectsBadInput checks each kind of bad input fails with an error naming the file
// and line (or option) at fault and leaves no output directory, not even a temporary one.
func TestBuildRejectsBadInput(t *testing.T) {
	good := makeRun(t, 30, 1.3, 5).log
	ls := lines(good)
	bind := lineOf(t, ls, `"type":"bind"`) // first decision
	edit := func(n int, f func(string) string) []byte {
		out := append([]string(nil), ls...)
		out[n-1] = f(out[n-1])
		return join(out)
	}
	cases := []struct {
		name    string
		log     []byte
		opts    func(*BuildOptions, string)
		want    []string // substrings of the error
		premade bool     // the output directory exists before the build
	}{
		{name: "truncated JSON line", log: join(append(append([]string(nil), ls[:bind]...), ls[bind][:len(ls[bind])/2])),
			want: []string{"bad.jsonl", "line " + itoa(bind+1)}},
		{name: "unknown event type", log: edit(bind, func(l string) string { return strings.Replace(l, `"type":"bind"`, `"type":"teleport"`, 1) }),
			want: []string{"bad.jsonl", "line " + itoa(bind), `unknown event type "teleport"`}},
		{name: "action on unknown task", log: edit(bind, func(l string) string { return strings.Replace(l, `"task":"`, `"task":"ghost-`, 1) }),
			want: []string{"bad.jsonl", "line " + itoa(bind), "ghost-", "not arrived"}},
		{name: "action on unknown node", log: edit(bind, func(l string) string {
			i := strings.Index(l, `"node":"`) + len(`"node":"`)
			return l[:i] + "nowhere-" + l[i:]
		}), want: []string{"bad.jsonl", "line " + itoa(bind), `unknown node "nowhere-`}},
		{name: "infeasible action", log: edit(bind-1, func(l string) string {
			// The task now asks for more CPU than any node has, so its logged bind cannot fit.
			return strings.Replace(l, `"cpu_milli":`, `"cpu_milli":9000000`, 1)
		}), want: []string{"bad.jsonl", "line " + itoa(bind), "cpu", "task needs 9000000"}},
		{name: "header does not match the node list", log: good, opts: func(o *BuildOptions, dir string) {
			nodes := filepath.Join(dir, "nodes.csv")
			writeFile(t, nodes, []byte("sn,cpu_milli,memory_mib,gpu,model\nother-node,96000,786432,8,V100M16\n"))
			o.Nodes = nodes
		}, want: []string{"bad.jsonl", "line 1", "header lists 30 nodes", "nodes.csv has 1"}},
		{name: "empty glob", log: good, opts: func(o *BuildOptions, dir string) { o.Logs = filepath.Join(dir, "*.missing") },
			want: []string{"*.missing", "no file matches"}},
		{name: "existing output without force", log: good, premade: true,
			want: []string{"already exists", "--force"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "bad.jsonl"), tc.log)
			out := filepath.Join(dir, "out", "ds")
			if tc.premade {
				if err := os.MkdirAll(out, 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(out, "keep.txt"), []byte("mine"))
			}
			o := testOptions(filepath.Join(dir, "*.jsonl"), out)
			if tc.opts != nil {
				tc.opts(&o, dir)
			}
			_, _, err := Build(o)
			if err == nil {
				t.Fatal("build succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			entries, _ := os.ReadDir(filepath.Join(dir, "out"))
			if tc.premade {
				if data, _ := os.ReadFile(filepath.Join(out, "keep.txt")); !bytes.Equal(data, []byte("mine")) || len(entries) != 1 {
					t.Fatalf("the existing output directory was touched: %v", entries)
				}
				return
			}
			if len(entries) != 0 {
				t.Fatalf("output left behind: %v", entries)
			}
		})
	}
}

// TestBuildWithNodeList accepts logs whose header matches the node list.
func TestBuildWithNodeList(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.jsonl"), makeRun(t, 0, 0.05, 3).log)
	o := testOptions(filepath.Join(dir, "*.jsonl"), filepath.Join(dir, "ds"))
	o.Nodes = traceFile("openb_node_list_gpu_node.csv")
	if _, _, err := Build(o); err != nil {
		t.Fatal(err)
	}
}

// TestFailedBuildAfterShardsLeavesNothing: a bad log sorted after a good one fails the build
// after shards were written; neither the output nor its temporary directory remains.
func TestFailedBuildAfterShardsLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	good := makeRun(t, 30, 1.3, 6).log
	writeFile(t, filepath.Join(dir, "a.jsonl"), good)
	ls := lines(good)
	writeFile(t, filepath.Join(dir, "b.jsonl"), join(ls[:len(ls)/2])) // cut at a line boundary: valid
	bad := append([]string(nil), ls...)
	bad[len(bad)-1] = bad[len(bad)-1][:10]
	writeFile(t, filepath.Join(dir, "c.jsonl"), join(bad))
	o := testOptions(filepath.Join(dir, "*.jsonl"), filepath.Join(dir, "out", "ds"))
	o.Workers, o.ShardRows = 1, 50
	_, _, err := Build(o)
	if err == nil || !strings.Contains(err.Error(), "c.jsonl") || !strings.Contains(err.Error(), "line "+itoa(len(bad))) {
		t.Fatalf("error %v, want one naming c.jsonl line %d", err, len(bad))
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "out")); len(entries) != 0 {
		t.Fatalf("output left behind: %v", entries)
	}
}
