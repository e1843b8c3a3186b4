package datasets

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/sim"
)

// TestBuildRoundTrip builds a dataset from expert logs and checks every rebuilt observation
// against the environment run live over the same workload with the same decisions.
func TestBuildRoundTrip(t *testing.T) {
	dir := t.TempDir()
	runs := map[string]expertRun{}
	for seed := uint64(42); seed < 45; seed++ {
		name := fmt.Sprintf("fgd-seed%d.jsonl", seed)
		runs[name] = makeRun(t, 200, 1.3, seed)
		writeFile(t, filepath.Join(dir, name), runs[name].log)
	}
	out := filepath.Join(dir, "ds")
	m, stats, err := Build(testOptions(filepath.Join(dir, "*.jsonl"), out))
	if err != nil {
		t.Fatal(err)
	}
	if stats.Rows != m.Rows || m.Rows != m.Splits[SplitTrain].Rows+m.Splits[SplitVal].Rows {
		t.Fatalf("row counts disagree: stats %d, manifest %d, splits %d+%d", stats.Rows, m.Rows, m.Splits[SplitTrain].Rows, m.Splits[SplitVal].Rows)
	}
	if m.Splits[SplitVal].Episodes != 1 || m.Splits[SplitTrain].Episodes != 2 {
		t.Fatalf("split %d train / %d val episodes, want 2/1", m.Splits[SplitTrain].Episodes, m.Splits[SplitVal].Episodes)
	}
	if len(m.Contexts) != 1 || len(m.Logs) != 3 {
		t.Fatalf("%d contexts and %d logs in the manifest, want 1 and 3", len(m.Contexts), len(m.Logs))
	}
	d, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range m.Episodes {
		run := runs[ep.Name]
		checkEpisode(t, d, ep, run)
	}
}

// checkEpisode steps a live Arrivals environment with the logged decisions and compares.
func checkEpisode(t *testing.T, d *Dataset, ep EpisodeInfo, run expertRun) {
	t.Helper()
	c, err := sim.NewCluster(run.nodes, run.model)
	if err != nil {
		t.Fatal(err)
	}
	live := env.NewArrivals(c, run.tasks, env.DefaultOptions())
	var liveObs env.Observation
	step := int64(0)
	var ret float64
	err = d.ReadEpisode(ep, func(s *Sample) error {
		if live.Done() {
			return fmt.Errorf("step %d: the live episode already ended", step)
		}
		live.Observe(&liveObs)
		if !reflect.DeepEqual(liveObs, s.Obs) {
			return fmt.Errorf("step %d: rebuilt observation differs from the live one", step)
		}
		if s.Row.TaskID != live.Task().Name {
			return fmt.Errorf("step %d: row task %s, live task %s", step, s.Row.TaskID, live.Task().Name)
		}
		r, err := live.Step(env.Action{Candidate: int(s.Row.Action), GPUs: sim.GPUSet(s.Row.ActionGPUs)})
		if err != nil {
			return err
		}
		if float32(r.Reward) != s.Row.Reward || r.Done != s.Row.Done {
			return fmt.Errorf("step %d: row reward %v done %v, live %v %v", step, s.Row.Reward, s.Row.Done, r.Reward, r.Done)
		}
		ret += float64(s.Row.Reward)
		step++
		return nil
	})
	if err != nil {
		t.Fatalf("episode %s: %v", ep.Name, err)
	}
	if step != ep.Rows || !live.Done() {
		t.Fatalf("episode %s: read %d of %d rows, live done %v", ep.Name, step, ep.Rows, live.Done())
	}
	if int64(live.Failed()) != ep.Failed {
		t.Fatalf("episode %s: %d failed in the manifest, %d live", ep.Name, ep.Failed, live.Failed())
	}
	if math.Abs(ret-ep.Return) > 1e-3*math.Max(1, math.Abs(ret)) {
		t.Fatalf("episode %s: return %v in the manifest, rows sum to %v", ep.Name, ep.Return, ret)
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	for seed := uint64(1); seed <= 3; seed++ {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("s%d.jsonl", seed)), makeRun(t, 40, 1.3, seed).log)
	}
	var shards [2][]ShardInfo
	for i, workers := range []int{1, 2} {
		o := testOptions(filepath.Join(dir, "*.jsonl"), filepath.Join(dir, fmt.Sprint("out", i)))
		o.Workers = workers
		m, _, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		shards[i] = append(m.Splits[SplitTrain].Shards, m.Splits[SplitVal].Shards...)
	}
	if !reflect.DeepEqual(shards[0], shards[1]) {
		t.Fatalf("shards differ between 1 and 2 workers:\n%+v\n%+v", shards[0], shards[1])
	}
}

// TestBuildKeepsLoggedLogProb: a bind that records the logging policy's log-probability keeps
// it in log_prob; binds without one stay null.
func TestBuildKeepsLoggedLogProb(t *testing.T) {
	ls := lines(makeRun(t, 30, 1.3, 9).log)
	withProb := 0
	for i, l := range ls {
		if strings.Contains(l, `"type":"bind"`) && i%3 == 0 {
			ls[i] = strings.TrimSuffix(l, "}") + fmt.Sprintf(`,"log_prob":-%d.5}`, i%4)
			withProb++
		}
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.jsonl"), join(ls))
	o := testOptions(filepath.Join(dir, "*.jsonl"), filepath.Join(dir, "ds"))
	o.ValFraction = 0
	m, _, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	var schema string
	for _, sh := range m.Splits[SplitTrain].Shards {
		err := scanShard(filepath.Join(dir, "ds", sh.Path), func(r *Row) {
			if r.LogProb != nil {
				line := int(r.LogLine)
				if want := -float32((line-1)%4) - 0.5; *r.LogProb != want {
					t.Errorf("row at line %d: log_prob %v", line, *r.LogProb)
				}
				got++
			}
		}, &schema)
		if err != nil {
			t.Fatal(err)
		}
	}
	if got != withProb || got == 0 {
		t.Fatalf("%d rows carry a log_prob, the log has %d", got, withProb)
	}
}
