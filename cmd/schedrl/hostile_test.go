package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/digest"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/nn"
)

// hostileCase is one command line of issue 34's probe and what its one-line error must say.
type hostileCase struct {
	class int // the "What to fix" item: 1 unbounded work, 2 silent wrong results, 3 panics, 4 outputs
	args  []string
	want  string
}

// checkHostile runs each case through execute, as main does: exit 1, one line starting with
// "schedrl:" (no runtime trace), naming what is wrong.
func checkHostile(t *testing.T, cases []hostileCase) {
	t.Helper()
	for _, c := range cases {
		code, out := inProcess(t, c.args...)
		out = strings.TrimSpace(out)
		if code != 1 || !strings.HasPrefix(out, "schedrl: ") || strings.Contains(out, "\n") || !strings.Contains(out, c.want) {
			t.Errorf("class %d: schedrl %s: exit %d, want 1 and one schedrl: line with %q:\n%s", c.class, strings.Join(c.args, " "), code, c.want, out)
		}
	}
}

// Issue 34, classes 1 and 2: inputs that made a command loop for ever, fill memory or compute
// nonsense are refused before any work, naming the flag, field, file or line.
func TestHostileInputsAreRefusedBeforeWork(t *testing.T) {
	t.Chdir(repotest.Root()) // the commands' default tables are repository paths
	dir := t.TempDir()
	nodes, pods := repotest.OpenbNodes(), repotest.OpenbPods("default")
	gavel := repotest.Data("gavel", "reference", "gen-16x3-lam2400-seed1-multigpu.trace")
	line := "ResNet-18 (batch size 64)\tpython3 main.py\timage_classification/cifar10\t--num_steps\t1\t1000\t1\t%s\t-1.000000\t%s\n"
	infWeight := writeFile(t, filepath.Join(dir, "inf-weight.trace"), fmt.Sprintf(line, "+Inf", "0"))
	farArrival := writeFile(t, filepath.Join(dir, "far.trace"), fmt.Sprintf(line, "1", "0")+fmt.Sprintf(line, "1", "1e300"))
	huge := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(huge, []byte("seed: 1\n# "+strings.Repeat("x", 30<<20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	openb := []string{"jobs", "openb", "--trace", pods, "--nodes", nodes}
	checkHostile(t, []hostileCase{
		{1, []string{"sim", "--nodes", nodes, "--pods", pods, "--seeds", "18446744073709551615,0-9999"}, "lists more than 10000 seeds"},
		{1, []string{"jobs", "fungible", "--policy", "synergy-tune", "--generate", "jobs=1000000000,lam=1"}, "field jobs: 1000000000 jobs, at most 200000"},
		{1, []string{"jobs", "gavel", "--generate", "jobs=100,lam=1e300", "--cluster", "8:8:8"}, "field lam"},
		{1, append(openb, "--load", "1", "--duration", "1e308"), "duration 1e+308 s: each at most 1e+09 s"},
		{1, append(openb, "--load", "1", "--tasks", "2000000000"), "task count 2000000000, at most 2000000"},
		{1, []string{"jobs", "gavel", "--trace", "/dev/zero"}, "/dev/zero"},
		{1, []string{"sim", "--nodes", "/dev/zero", "--pods", pods}, "/dev/zero: not a text file"},
		{1, []string{"config", "show", "--config", huge}, "huge.yaml: 30 MiB, over the limit (a config file may have at most 1 MiB)"},
		{1, []string{"jobs", "gavel", "--trace", gavel, "--cluster", "16:16:16", "--round", "1e-300"}, "round 1e-300 s: the 1454 jobs could need"},
		{1, []string{"jobs", "gavel", "--trace", farArrival, "--cluster", "1:1:1"}, "far.trace:2: arrival time 1e+300 s is beyond the limit"},
		{1, []string{"defrag", "online", "--pods", pods, "--load", "1", "--duration", "86400", "--every", "1e-9"}, "every_s: must be at least 0.001 s"},
		{1, []string{"defrag", "online", "--pods", pods, "--load", "1", "--duration", "1e9", "--every", "1"}, "every: 1 s over duration 1e+09 s is 1e+09 trigger checks"},
		{2, append(openb, "--load", "NaN", "--tasks", "10"), `invalid argument "NaN" for "--load" flag: want a finite number`},
		{2, append(openb, "--warmup", "NaN"), `"--warmup" flag: want a finite number`},
		{2, []string{"sim", "--nodes", nodes, "--pods", pods, "--tune", "+Inf"}, `"--tune" flag: want a finite number`},
		{2, []string{"jobs", "gavel", "--trace", gavel, "--round", "-Inf"}, `"--round" flag: want a finite number`},
		{2, []string{"defrag", "online", "--pods", pods, "--load", "1", "--duration", "3600", "--downtime-base", "Inf"}, `"--downtime-base" flag`},
		{2, []string{"jobs", "gavel", "--trace", infWeight, "--cluster", "1:1:1"}, "inf-weight.trace:1: priority weight \"+Inf\", want a finite number > 0"},
		{2, []string{"config", "show", "--set", "sim.coverage=NaN"}, "sim.coverage (from flag --set sim.coverage=NaN): NaN is not a finite number"},
	})
}

// Issue 34, class 3: a malformed Parquet shard whose manifest checksum matches, and a
// checkpoint whose manifest asks for an absurd network, give one clean line, not a panic.
func TestHostileFilesGiveOneLineNotAPanic(t *testing.T) {
	dir := t.TempDir()
	tiny := writeFile(t, filepath.Join(dir, "nodes.csv"), "sn,cpu_milli,memory_mib,gpu,model\nn0,96000,786432,8,V100M32\nn1,96000,786432,8,V100M32\n")
	logs := filepath.Join(dir, "logs")
	if code, out := inProcess(t, "sim", "--nodes", tiny, "--pods", repotest.OpenbPods("default"), "--policy", "fgd", "--seeds", "1-2", "--log-dir", logs); code != 0 {
		t.Fatalf("sim: %s", out)
	}
	ds := filepath.Join(dir, "ds")
	if code, out := inProcess(t, "datasets", "build", "--logs", filepath.Join(logs, "*.jsonl"), "--out", ds); code != 0 {
		t.Fatalf("datasets build: %s", out)
	}
	m, err := datasets.ReadManifest(ds)
	if err != nil {
		t.Fatal(err)
	}
	sh := &m.Splits[datasets.SplitTrain].Shards[0]
	shard := filepath.Join(ds, filepath.FromSlash(sh.Path))
	if err := os.WriteFile(shard, []byte("PAR1 not a parquet file PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if sh.SHA256, sh.Bytes, err = digest.File(shard); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(ds, datasets.ManifestFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}

	spec, err := env.SpecOf(env.PlacementName)
	if err != nil {
		t.Fatal(err)
	}
	arch := nn.NewArch(spec, config.Default().Network, 1)
	arch.Hidden = 1 << 40
	ck := filepath.Join(dir, "absurd")
	if err := os.Mkdir(ck, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ck, checkpoint.ModelFile), "")
	if _, err := checkpoint.Write(ck, checkpoint.Manifest{Model: arch.Kind, Env: env.PlacementName, Created: time.Now(), Hyper: map[string]any{"arch": arch}}); err != nil {
		t.Fatal(err)
	}
	checkHostile(t, []hostileCase{
		{3, []string{"datasets", "inspect", ds}, sh.Path + ": not a readable Parquet shard"},
		{3, []string{"sim", "--nodes", tiny, "--pods", repotest.OpenbPods("default"), "--policy", "ckpt:" + ck}, "layer sizes hidden 1099511627776"},
	})
}

// Issue 34, class 4: one rule for every output flag: its folder must exist, --force replaces
// only an output of the same kind, and a set of logs is complete or marked incomplete.
func TestOutputRule(t *testing.T) {
	dir := t.TempDir()
	pods := repotest.OpenbPods("default")
	tiny := writeFile(t, filepath.Join(dir, "nodes.csv"), "sn,cpu_milli,memory_mib,gpu,model\nn0,96000,786432,8,V100M32\n")
	report := filepath.Dir(writeFile(t, filepath.Join(dir, "report", "metrics.json"), `{"schema":"schedrl.eval.metrics/v1"}`))
	dataset := filepath.Dir(writeFile(t, filepath.Join(dir, "ds", "manifest.json"), `{"schema_version":"transitions-v1"}`))
	other := filepath.Dir(writeFile(t, filepath.Join(dir, "notes", "todo.txt"), "keep me"))
	missing := filepath.Join(dir, "nonexistent")
	logs := filepath.Join(dir, "logs")
	sim := []string{"sim", "--nodes", tiny, "--pods", pods, "--policy", "fgd", "--seeds", "1-2"}
	if code, out := inProcess(t, append(sim, "--log-dir", logs)...); code != 0 {
		t.Fatalf("sim: %s", out)
	}
	interrupted := filepath.Join(dir, "interrupted")
	if _, err := atomicfile.BeginSet(interrupted, "", "a test", false); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(interrupted, "half.jsonl"), "{}\n")
	checkHostile(t, []hostileCase{
		{4, []string{"datasets", "build", "--logs", filepath.Join(logs, "*.jsonl"), "--out", report, "--force"}, report + " is an eval report, and this command writes a dataset there"},
		{4, []string{"eval", "--policies", "fgd", "--out", dataset, "--force"}, dataset + " is a dataset, and this command writes an eval report there"},
		{4, []string{"eval", "--policies", "fgd", "--out", other, "--force"}, other + " holds files that are not an eval report: --force replaces only an eval report"},
		{4, []string{"pretrain", "--data", dataset, "--out", report}, report + " is an eval report, and this command writes a checkpoint there"},
		{4, append(sim, "--log-dir", dataset), dataset + " is a dataset, and this command writes a folder of logs there"},
		{4, append(sim, "--log-dir", logs), "a set of an earlier run already exists (2 files"},
		{4, []string{"jobs", "openb", "--trace", pods, "--series", filepath.Join(missing, "s.csv")}, "--series " + filepath.Join(missing, "s.csv") + ": folder " + missing + " does not exist"},
		{4, []string{"jobs", "openb", "--trace", pods, "--log", filepath.Join(missing, "l.jsonl")}, "--log " + filepath.Join(missing, "l.jsonl") + ": folder " + missing + " does not exist"},
		{4, []string{"maifs-bc", "--out", filepath.Join(missing, "bc")}, "folder " + missing + " does not exist"},
		{4, []string{"defrag", "online", "--pods", pods, "--load", "1", "--duration", "3600", "--method", "make-room", "--demos", report}, report + " is an eval report"},
		{4, []string{"defrag", "online", "--pods", pods, "--load", "1", "--duration", "3600", "--series", filepath.Join(missing, "s.csv")}, "folder " + missing + " does not exist"},
		{4, []string{"datasets", "build", "--logs", filepath.Join(interrupted, "*.jsonl"), "--out", filepath.Join(dir, "ds2")}, "half.jsonl belongs to an incomplete set"},
	})
	if data, err := os.ReadFile(filepath.Join(other, "todo.txt")); err != nil || string(data) != "keep me" {
		t.Errorf("a refused --force touched %s: %q, %v", other, data, err)
	}
	// --force replaces a set of the same kind whole, and the set is complete again.
	if code, out := inProcess(t, append(sim[:len(sim)-1], "3", "--log-dir", logs, "--force")...); code != 0 {
		t.Fatalf("sim --force: %s", out)
	}
	entries, _ := os.ReadDir(logs)
	if len(entries) != 1 || !strings.Contains(entries[0].Name(), "seed3") {
		t.Errorf("after --force with seed 3 the set holds %v", entries)
	}
}
