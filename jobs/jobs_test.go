package jobs

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
)

// handTable is a throughput table built by hand: model -> steps/s on V100, P100, K80.
func handTable(models map[string][NumGPUs]float64) *Throughputs {
	t := &Throughputs{alone: map[JobType][NumGPUs]float64{}, pairs: map[[2]JobType][NumGPUs][2]float64{}}
	for m, v := range models {
		for _, s := range []int{1, 2, 4, 8} {
			t.alone[JobType{m, s}] = v
		}
	}
	return t
}

type handJob struct {
	model   string
	steps   int64
	arrival float64
}

func handTrace(js ...handJob) *Trace {
	tr := &Trace{Path: "hand.trace"}
	for i, j := range js {
		tr.Jobs = append(tr.Jobs, Job{Index: i, Line: i + 1, Type: JobType{j.model, 1}, Steps: j.steps, Arrival: j.arrival, PriorityWeight: 1})
	}
	return tr
}

func mustRun(t *testing.T, tr *Trace, table *Throughputs, cfg Config) Result {
	t.Helper()
	res, err := Run(tr, table, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func cluster(t *testing.T, spec string) Cluster {
	t.Helper()
	c, err := ParseCluster(spec, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoneJobFinishesAtStepsOverThroughput(t *testing.T) {
	table := handTable(map[string][NumGPUs]float64{"m": {2.5, 2, 1}, "odd": {3.7, 1.3, 0.9}})
	for _, compat := range []string{CompatNone, CompatGavel} {
		// max_min_fairness is blind to throughput, so even alone a job is spread over types.
		for _, policy := range []string{"fifo", "max_min_fairness_perf", "sjf", "srtf", "tiresias-las"} {
			if compat == CompatGavel && policy != "fifo" && policy != "max_min_fairness_perf" {
				continue
			}
			// 10,000 steps at 2.5 steps/s on the V100: exactly 4,000 s in binary floating point.
			res := mustRun(t, handTrace(handJob{"m", 10000, 100}), table, Config{Cluster: cluster(t, "1:1:1"), Policy: policy, Compat: compat})
			if res.JCT[0] != 4000 || res.Makespan != 4100 {
				t.Errorf("%s/%s: JCT %v makespan %v, want exactly 4000 and 4100", compat, policy, res.JCT[0], res.Makespan)
			}
			res = mustRun(t, handTrace(handJob{"odd", 123457, 0}), table, Config{Cluster: cluster(t, "1:1:1"), Policy: policy, Compat: compat})
			if want := 123457 / 3.7; math.Abs(res.JCT[0]-want) > 1e-9*want {
				t.Errorf("%s/%s: JCT %v, want %v", compat, policy, res.JCT[0], want)
			}
		}
	}
}

// finishOrder runs the hand trace and returns the job indices by completion time.
func finishOrder(t *testing.T, tr *Trace, table *Throughputs, cfg Config) ([]int, Result) {
	res := mustRun(t, tr, table, cfg)
	order := make([]int, 0, len(res.JCT))
	for i := range res.JCT {
		order = append(order, i)
	}
	finish := func(i int) float64 { return tr.Jobs[i].Arrival + res.JCT[i] }
	for a := 1; a < len(order); a++ {
		for b := a; b > 0 && finish(order[b]) < finish(order[b-1]); b-- {
			order[b], order[b-1] = order[b-1], order[b]
		}
	}
	return order, res
}

func TestQueuePoliciesOrderAHandBuiltCase(t *testing.T) {
	table := handTable(map[string][NumGPUs]float64{"m": {1, 1, 1}})
	one := cluster(t, "1:0:0")
	// On one GPU: a long job, then a short and a medium one at once, then a tiny one while
	// the long one runs.
	tr := handTrace(handJob{"m", 20000, 0}, handJob{"m", 3000, 10}, handJob{"m", 8000, 10}, handJob{"m", 500, 20})
	cases := map[string][]int{
		"fifo": {0, 1, 2, 3}, // arrival order
		"sjf":  {0, 3, 1, 2}, // the long job keeps its GPU; then shortest first
		"srtf": {3, 1, 2, 0}, // preempted at the first boundary by shorter remaining work
		// 2D-LAS: everyone starts in queue 0, FIFO, so the long job runs to 3,600 GPU-s and
		// drops to queue 1; the short one finishes in queue 0; the medium one drops at 3,600 and
		// yields to the tiny one; queue 1 is FIFO again (long, then medium).
		"tiresias-las": {1, 3, 0, 2},
	}
	for policy, want := range cases {
		got, _ := finishOrder(t, tr, table, Config{Cluster: one, Policy: policy})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: finish order %v, want %v", policy, got, want)
		}
	}
	// Max-min fairness: two identical jobs on one GPU take turns and finish a round apart,
	// each after about twice its time alone.
	_, res := finishOrder(t, handTrace(handJob{"m", 36000, 0}, handJob{"m", 36000, 0}), table, Config{Cluster: one, Policy: "max_min_fairness"})
	if d := math.Abs(res.JCT[0] - res.JCT[1]); d > 360 || res.JCT[0] < 1.9*36000 {
		t.Errorf("max_min_fairness: JCTs %v, want both about 72,000 s and a round apart", res.JCT)
	}
	// Heterogeneity-aware: a job 10x faster on the V100 gets more V100 time than plain
	// max-min, which splits every job's time by GPU count, gives it; the other job, about as
	// fast on either type, loses next to nothing.
	het := handTable(map[string][NumGPUs]float64{"v": {10, 1, 1}, "k": {2, 1, 1.9}})
	tr = handTrace(handJob{"v", 360000, 0}, handJob{"k", 68400, 0})
	_, perf := finishOrder(t, tr, het, Config{Cluster: cluster(t, "1:0:1"), Policy: "max_min_fairness_perf"})
	_, plain := finishOrder(t, tr, het, Config{Cluster: cluster(t, "1:0:1"), Policy: "max_min_fairness"})
	if perf.JCT[0] > 0.85*plain.JCT[0] || perf.JCT[1] > 1.01*plain.JCT[1] {
		t.Errorf("JCTs: max_min_fairness_perf %v, max_min_fairness %v; want the perf policy's clearly lower for job 0 and within 1%% for job 1", perf.JCT, plain.JCT)
	}
}

func TestSameSeedSameResult(t *testing.T) {
	table := loadTable(t)
	tr, err := ReadTrace(repotest.Data("gavel", "reference", "gen-16x3-lam2400-seed1-multigpu.trace"))
	if err != nil {
		t.Fatal(err)
	}
	for _, compat := range []string{CompatNone, CompatGavel} {
		for _, policy := range []string{"fifo", "max_min_fairness_perf"} {
			cfg := Config{Cluster: cluster(t, "16:16:16"), Policy: policy, Window: [2]int{0, 300}, Seed: 7, Compat: compat}
			a, b := mustRun(t, tr, table, cfg), mustRun(t, tr, table, cfg)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s/%s: two runs with seed 7 differ", compat, policy)
			}
		}
	}
}

// Invariants on every policy in both modes, on a configuration no reference covers.
func TestInvariantsOnAnUnnamedConfiguration(t *testing.T) {
	table := loadTable(t)
	tr, err := ReadTrace(repotest.Data("gavel", "traces", "msr", "seed=1", "ed69ec.trace"))
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(t, "12:20:28")
	tputs, _ := tr.throughputsOf(table)
	for _, compat := range []string{CompatNone, CompatGavel} {
		for _, policy := range Policies() {
			if compat == CompatGavel && !strings.HasPrefix(policy, "fifo") && !strings.HasPrefix(policy, "max_min") {
				continue
			}
			res := mustRun(t, tr, table, Config{Cluster: c, Policy: policy, Window: [2]int{0, 300}, Seed: 3, Compat: compat})
			if res.Utilization < 0 || res.Utilization > 1 || len(res.JCT)+len(res.Dropped) != 300 {
				t.Errorf("%s/%s: utilization %v, %d JCTs + %d dropped of 300", compat, policy, res.Utilization, len(res.JCT), len(res.Dropped))
			}
			for i, v := range res.JCT {
				best := 0.0
				for g := range GPU(NumGPUs) {
					if c.GPUs[g] > 0 {
						best = max(best, tputs[i][g])
					}
				}
				if v < float64(tr.Jobs[i].Steps)/best*(1-1e-12) {
					t.Errorf("%s/%s: job %d JCT %v below its steps at its best throughput %v", compat, policy, i, v, float64(tr.Jobs[i].Steps)/best)
				}
			}
		}
	}
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const line10 = "ResNet-18 (batch size 64)\tpython3 main.py\timage_classification/cifar10\t--num_steps\t1\t%s\t%s\t1\t-1.000000\t%s\n"

func TestBadInputNamesFileAndLine(t *testing.T) {
	table := loadTable(t)
	good := strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(line10, "%s\t%s\t1\t-1", "1000\t1\t1\t-1"), "\t%s\n", "\t0\n"), "%s", "")
	cases := map[string]struct{ text, want string }{
		"negative arrival": {good + strings.Replace(good, "\t0\n", "\t-5\n", 1), "bad.trace:2: negative arrival"},
		"zero steps":       {good + strings.Replace(good, "\t1000\t", "\t0\t", 1), "bad.trace:2: total steps 0"},
		"fields":           {"a\tb\tc\n", "bad.trace:1: 3 tab-separated fields"},
		"out of order":     {strings.Replace(good, "\t0\n", "\t9\n", 1) + good, "bad.trace:2: arrival 0 is before"},
	}
	for name, c := range cases {
		_, err := ReadTrace(writeFile(t, "bad.trace", c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", name, err, c.want)
		}
	}
	unknown := good + strings.Replace(good, "\t1\t1\t-1", "\t3\t1\t-1", 1) + strings.Replace(good, "\t1\t1\t-1", "\t3\t1\t-1", 1) +
		strings.Replace(good, "ResNet-18 (batch size 64)", "Mystery", 1)
	tr, err := ReadTrace(writeFile(t, "unknown.trace", unknown))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(tr, table, Config{Cluster: cluster(t, "1:1:1"), Policy: "fifo"})
	for _, want := range []string{"unknown.trace: 3 lines", "('ResNet-18 (batch size 64)', 3): 2 lines (first: line 2)", "('Mystery', 1): 1 lines (first: line 4)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing throughput: error %v, want it to contain %q", err, want)
		}
	}
	tr, _ = ReadTrace(writeFile(t, "ok.trace", good))
	if _, err := Run(tr, table, Config{Cluster: cluster(t, "1:1:1"), Policy: "lottery"}); err == nil || !strings.Contains(err.Error(), `unknown policy "lottery"`) {
		t.Errorf("unknown policy: error %v", err)
	}
	for spec, want := range map[string]string{"36:36": "2 fields", "36:x:36": `field 2 (p100) is "x"`, "0:0:0": "no GPU", "-1:2:3": "field 1 (v100)"} {
		if _, err := ParseCluster(spec, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("cluster %q: error %v, want %q", spec, err, want)
		}
	}
}

func TestAliasesAndServers(t *testing.T) {
	for alias, want := range map[string]string{"las": "max_min_fairness", "gavel": "max_min_fairness_perf", "Tiresias": "tiresias-las", "tiresias_las": "tiresias-las", "max-min-fairness-perf": "max_min_fairness_perf"} {
		if got, err := canonical(alias); err != nil || got != want {
			t.Errorf("alias %q: %q, %v; want %q", alias, got, err, want)
		}
	}
	c, err := ParseCluster("36:36:30", "8:4:4")
	if err != nil || c.GPUs != [NumGPUs]int{32, 36, 28} {
		t.Errorf("36:36:30 in servers of 8:4:4: %v %v, want whole servers 32:36:28", c.GPUs, err)
	}
}

func TestThroughputTableAndTraceForms(t *testing.T) {
	table := loadTable(t)
	if table.Len() != 26+19*3 {
		t.Errorf("%d job types, want 26 at scale 1 and 19 at each of 2, 4, 8", table.Len())
	}
	a, b := JobType{"ResNet-18 (batch size 16)", 1}, JobType{"ResNet-18 (batch size 64)", 1}
	if p, ok := table.Pair(a, b, V100); !ok || p != [2]float64{32.353384328946916, 24.093231895382736} {
		t.Errorf("co-located pair on V100: %v %v", p, ok)
	}
	if v, _ := table.Alone(a); v[V100] != 32.353384328946916 {
		t.Errorf("alone on V100: %v", v)
	}
	msr, err := ReadTrace(repotest.Data("gavel", "traces", "msr", "seed=0", "ed69ec.trace"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ReadTrace(repotest.Data("gavel", "reference", "msr-seed0-ed69ec-first300.trace"))
	if err != nil {
		t.Fatal(err)
	}
	if len(msr.Jobs) != 951 || len(ref.Jobs) != 300 {
		t.Fatalf("%d msr jobs, %d reference jobs", len(msr.Jobs), len(ref.Jobs))
	}
	for i, j := range ref.Jobs {
		m := msr.Jobs[i]
		if m.Type != j.Type || m.Steps != j.Steps || m.Arrival != j.Arrival {
			t.Fatalf("job %d: 7-field %+v, 10-field %+v", i, m, j)
		}
	}
	sf0 := writeFile(t, "sf0.trace", "A\tcmd\t-n\t1\t10\t0.0\t0\nB\tcmd\t-n\t1\t10\t1.0\t1\n")
	tr, err := ReadTrace(sf0)
	if err != nil || len(tr.Jobs) != 1 || tr.Jobs[0].Index != 0 || tr.Jobs[0].Line != 2 {
		t.Errorf("7-field scale factor 0 is skipped: %+v %v", tr, err)
	}
}
