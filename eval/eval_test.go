package eval

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// smallCluster writes a 24-node cluster and a 90-task trace mixing CPU-only, GPU-sharing and
// multi-GPU tasks, so a run takes milliseconds and still fragments.
func smallCluster(t *testing.T) (nodes, pods string) {
	t.Helper()
	dir := t.TempDir()
	var n bytes.Buffer
	n.WriteString("sn,cpu_milli,memory_mib,gpu,model\n")
	for i := range 24 {
		model, gpus := "V100M16", 8
		if i%3 == 0 {
			model, gpus = "T4", 2
		}
		fmt.Fprintf(&n, "node-%02d,64000,262144,%d,%s\n", i, gpus, model)
	}
	var p bytes.Buffer
	p.WriteString("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n")
	for i := range 90 {
		numGPU, milli, spec := 1, []int{250, 500, 1000, 300}[i%4], ""
		switch {
		case i%9 == 0:
			numGPU, milli = 0, 0
		case i%7 == 0:
			numGPU, milli = 4, 1000
		case i%11 == 0:
			spec = "T4"
		}
		fmt.Fprintf(&p, "pod-%03d,%d,8192,%d,%d,%s,LS,Running,%d,%d,%d\n", i, 2000+1000*(i%5), numGPU, milli, spec, i, i+100, i)
	}
	nodes, pods = filepath.Join(dir, "nodes.csv"), filepath.Join(dir, "openb_pod_list_small.csv")
	for path, data := range map[string][]byte{nodes: n.Bytes(), pods: p.Bytes()} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return nodes, pods
}

func smallConfig(t *testing.T) config.EvalConfig {
	nodes, pods := smallCluster(t)
	var c config.EvalConfig
	c.SetDefaults()
	c.Policies = []string{"fgd", "bestfit", "random"}
	c.Traces = []string{"small"}
	c.TracesDir = filepath.Dir(pods)
	c.Nodes = nodes
	c.Seeds = "1-3"
	c.PaperOverlay = false
	c.Out = filepath.Join(t.TempDir(), "report")
	return c
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestRunWritesEveryOutput(t *testing.T) {
	cfg := smallConfig(t)
	m, err := Run(context.Background(), cfg, Options{Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Results) != 3 || m.Results[0].Policy != "fgd" || m.Results[2].Policy != "random" {
		t.Fatalf("results are not policies x traces in order: %+v", m.Results)
	}
	read, err := ReadMetrics(filepath.Join(cfg.Out, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := read.Find("bestfit", "small")
	if r == nil || r.AllocGPUPct130.N != 3 || len(r.PerSeed) != 3 || r.PerSeed[0].Seed != 1 {
		t.Fatalf("metrics.json lacks bestfit on small over 3 seeds: %+v", r)
	}
	base := read.Find("fgd", "small")
	if read.Baseline != "fgd" || base.VsBaseline != nil || r.VsBaseline == nil || r.VsBaseline.Diff.N != 3 ||
		math.Abs(r.VsBaseline.Diff.Mean-(r.AllocGPUPct130.Mean-base.AllocGPUPct130.Mean)) > 1e-9 {
		t.Fatalf("bestfit is not paired with the first policy, fgd: baseline %q, %+v", read.Baseline, r.VsBaseline)
	}
	if !(r.AllocGPUPct130.Mean > 0 && r.AllocGPUPct130.Mean <= 100) || r.LatencyP99Us.Mean <= 0 ||
		r.AllocGPUPct130.Low > r.AllocGPUPct130.Mean || r.PerSeed[0].Tasks == 0 {
		t.Fatalf("implausible summary: %+v", r)
	}
	failed := 0
	for _, s := range r.PerSeed {
		for _, n := range s.FailedByKind {
			failed += n
		}
		if s.Placed+failed != s.Tasks {
			t.Fatalf("seed %d: placed %d + failed %d != tasks %d", s.Seed, s.Placed, failed, s.Tasks)
		}
		failed = 0
	}
	for _, name := range pngNames(m.Traces) {
		f, err := os.Open(filepath.Join(cfg.Out, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
			t.Errorf("%s is only %v", name, b)
		}
	}
	curves, err := os.ReadFile(filepath.Join(cfg.Out, "curves.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(curves)), "\n")
	want := 1
	for _, res := range m.Results {
		for _, s := range res.PerSeed {
			want += len(s.Curve)
		}
	}
	if lines[0] != strings.Join(curvesHeader, ",") || len(lines) != want {
		t.Fatalf("curves.csv: header %q and %d lines, want %d", lines[0], len(lines), want)
	}
	md, _ := os.ReadFile(filepath.Join(cfg.Out, "report.md"))
	page, _ := os.ReadFile(filepath.Join(cfg.Out, "report.html"))
	for _, name := range pngNames(m.Traces) {
		if !strings.Contains(string(md), "]("+name+")") {
			t.Errorf("report.md does not embed %s", name)
		}
	}
	if n := strings.Count(string(page), "data:image/png;base64,"); n != len(pngNames(m.Traces)) {
		t.Errorf("report.html inlines %d images, want %d", n, len(pngNames(m.Traces)))
	}
	if !strings.Contains(string(md), "| BestFit |") {
		t.Errorf("report.md has no BestFit row:\n%s", md)
	}
	if !strings.Contains(string(md), "Against FGD on the same seeds") || !strings.Contains(string(md), " vs FGD |") {
		t.Errorf("report.md has no paired comparison with FGD:\n%s", md)
	}
}

// Same seeds, same numbers, however many workers run them.
func TestRunDeterministicAcrossParallelism(t *testing.T) {
	cfg := smallConfig(t)
	var curves [][]byte
	for _, workers := range []int{1, 3} {
		cfg.Parallelism, cfg.Out = workers, filepath.Join(t.TempDir(), "report")
		if _, err := Run(context.Background(), cfg, Options{Log: quiet}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(cfg.Out, "curves.csv"))
		if err != nil {
			t.Fatal(err)
		}
		curves = append(curves, data)
	}
	if !bytes.Equal(curves[0], curves[1]) {
		t.Fatal("curves.csv differs between 1 and 3 workers")
	}
}

func TestBadReferencesFailBeforeAnyWork(t *testing.T) {
	base := smallConfig(t)
	badTrace := filepath.Join(base.TracesDir, "openb_pod_list_broken.csv")
	if err := os.WriteFile(badTrace, []byte("name,cpu_milli\npod,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		edit    func(*config.EvalConfig)
		wantErr []string
	}{
		{"unknown policy", func(c *config.EvalConfig) { c.Policies = []string{"fgd", "bestfitt"} },
			[]string{`policy "bestfitt"`, "valid:", "bestfit"}},
		{"missing checkpoint", func(c *config.EvalConfig) { c.Policies = []string{"fgd", "ckpt:/no/such/ckpt"} },
			[]string{`policy "ckpt:/no/such/ckpt"`, "/no/such/ckpt"}},
		{"checkpoint without resolver", func(c *config.EvalConfig) { c.Policies = []string{"ckpt:" + c.TracesDir} },
			[]string{`policy "ckpt:`, "resolver that loads networks"}},
		{"registry without resolver", func(c *config.EvalConfig) { c.Policies = []string{"placer@champion"} },
			[]string{`policy "placer@champion"`, "registry"}},
		{"policy twice", func(c *config.EvalConfig) { c.Policies = []string{"fgd", "FGD"} },
			[]string{`"FGD" is listed twice`}},
		{"missing trace", func(c *config.EvalConfig) { c.Traces = []string{"small", "gpushare41"} },
			[]string{`trace "gpushare41"`, "openb_pod_list_gpushare41.csv"}},
		{"trace fails to load", func(c *config.EvalConfig) { c.Traces = []string{"broken"} },
			[]string{`trace "broken"`, "openb_pod_list_broken.csv"}},
		{"missing nodes", func(c *config.EvalConfig) { c.Nodes = "/no/nodes.csv" },
			[]string{`nodes "/no/nodes.csv"`}},
		{"missing paper table", func(c *config.EvalConfig) { c.PaperOverlay, c.Paper = true, "/no/paper.csv" },
			[]string{"paper overlay", "/no/paper.csv"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.Out = filepath.Join(t.TempDir(), "report")
			tc.edit(&cfg)
			_, err := Run(context.Background(), cfg, Options{Log: quiet})
			if err == nil {
				t.Fatal("Run succeeded")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if entries, _ := os.ReadDir(filepath.Dir(cfg.Out)); len(entries) != 0 {
				t.Errorf("a failed evaluation left %v behind", entries)
			}
		})
	}
}

func TestRunRefusesExistingOutWithoutForce(t *testing.T) {
	cfg := smallConfig(t)
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), cfg, Options{Log: quiet}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("Run over an existing report: %v, want a --force hint", err)
	}
	if _, err := Run(context.Background(), cfg, Options{Log: quiet, Force: true}); err != nil {
		t.Fatal(err)
	}
}

// On the paper's own workload the report carries the published means beside ours.
func TestRunOverlaysThePaper(t *testing.T) {
	var cfg config.EvalConfig
	cfg.SetDefaults()
	root := repotest.Root()
	cfg.TracesDir, cfg.Nodes, cfg.Paper = filepath.Join(root, cfg.TracesDir), filepath.Join(root, cfg.Nodes), filepath.Join(root, cfg.Paper)
	cfg.Policies, cfg.Traces, cfg.Seeds = []string{"bestfit"}, []string{"default"}, "49"
	cfg.Out = filepath.Join(t.TempDir(), "report")
	m, err := Run(context.Background(), cfg, Options{Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r := m.Find("bestfit", "default")
	if r.Paper == nil || r.Paper.Policy != "05-BestFit" || r.Paper.AllocGPUPct130 < 93.07 || r.Paper.AllocGPUPct130 > 93.09 {
		t.Fatalf("paper point = %+v, want 05-BestFit at 93.08", r.Paper)
	}
	// One seed is noisier than the paper's ten; the simulator's own fidelity test holds the
	// tight band, this one that eval runs the same protocol.
	if d := r.AllocGPUPct130.Mean - r.Paper.AllocGPUPct130; d < -1 || d > 1 {
		t.Errorf("BestFit on default seed 49: %.2f%% at 130%%, paper %.2f%%", r.AllocGPUPct130.Mean, r.Paper.AllocGPUPct130)
	}
	md, _ := os.ReadFile(filepath.Join(cfg.Out, "report.md"))
	if !strings.Contains(string(md), "| 93.08 |") {
		t.Errorf("report.md does not show the paper's 93.08")
	}
}

// eval's numbers are the simulator's: the same experiment run directly gives the same curve.
func TestRunMatchesTheSimulator(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Policies, cfg.Seeds = []string{"fgd"}, "7"
	m, err := Run(context.Background(), cfg, Options{Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	exp := sim.Experiment{NodesPath: cfg.Nodes, PodsPath: filepath.Join(cfg.TracesDir, "openb_pod_list_small.csv"),
		Tune: cfg.Tune, Seed: 7, Coverage: 0.95}
	prep, err := sim.Prepare(exp)
	if err != nil {
		t.Fatal(err)
	}
	placer, err := policy.NewPlacer("fgd")
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := prep.Run(placer, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Results[0].PerSeed[0]
	if !slices.Equal(got.Curve, want.Curve) || got.Placed != want.Placed || !maps.Equal(got.FailedByKind, want.FailedByKind) {
		t.Fatalf("eval run differs from sim: placed %d vs %d, failed %v vs %v", got.Placed, want.Placed, got.FailedByKind, want.FailedByKind)
	}
}

func TestScore(t *testing.T) {
	seeds := func(xs ...float64) []SeedRun {
		runs := make([]SeedRun, len(xs))
		for i, x := range xs {
			runs[i] = SeedRun{Seed: uint64(i + 1), AllocGPUPct130: x, FragRatioPct130: 100 - x}
		}
		return runs
	}
	m := &Metrics{Results: []Result{
		{Policy: "fgd", Trace: "default", PerSeed: seeds(95.4, 95.2)},
		{Policy: "fgd", Trace: "cpu050", PerSeed: seeds(95.2, 95.0)},
		{Policy: "ckpt:x", Trace: "default", PerSeed: seeds(95.6, 95.1)},
	}}
	s, err := m.Score("alloc_gpu_pct_130")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s["fgd"]["default"], []float64{95.4, 95.2}) || !slices.Equal(s["fgd"]["cpu050"], []float64{95.2, 95.0}) ||
		!slices.Equal(s["ckpt:x"]["default"], []float64{95.6, 95.1}) || len(s) != 2 {
		t.Fatalf("Score = %v", s)
	}
	if s, _ := m.Score("frag_ratio_pct_130"); math.Abs(s["fgd"]["default"][0]-4.6) > 1e-9 {
		t.Fatalf("frag score = %v", s)
	}
	if _, err := m.Score("alloc"); err == nil || !strings.Contains(err.Error(), "alloc_gpu_pct_130") {
		t.Fatalf("unknown metric error = %v, want the valid names", err)
	}
}

// A run that fails stops the evaluation, names the run and leaves no report behind.
func TestRunFailureLeavesNoReport(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Policies = []string{"fgd", "ckpt:" + t.TempDir()}
	resolve := func(ref PolicyRef) (PolicyFactory, error) {
		if ref.Kind == Checkpoint {
			return func() (sim.Placer, error) { return nil, fmt.Errorf("network went away") }, nil
		}
		return Heuristics(ref)
	}
	_, err := Run(context.Background(), cfg, Options{Log: quiet, Resolve: resolve})
	if err == nil || !strings.Contains(err.Error(), `policy "ckpt:`) || !strings.Contains(err.Error(), "network went away") {
		t.Fatalf("Run = %v, want the failing run named", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(cfg.Out)); len(entries) != 0 {
		t.Errorf("a failed evaluation left %v behind", entries)
	}
}

// pngNames lists the figures a report must have.
func pngNames(traces []string) []string {
	var names []string
	for _, t := range traces {
		names = append(names, "alloc_"+t+".png", "frag_"+t+".png")
	}
	return append(names, "bars_alloc130.png", "bars_frag130.png")
}
