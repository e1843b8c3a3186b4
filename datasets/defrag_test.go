package datasets

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/env"
)

// defragDemos writes n migration logs of random states (greedy plans, and random-agent plans
// that may STOP early) into dir and returns the problems and plans that made them.
func defragDemos(t *testing.T, dir string, n int) ([]defrag.Problem, []defrag.Plan) {
	t.Helper()
	var probs []defrag.Problem
	var plans []defrag.Plan
	for seed := range uint64(n) {
		pr, err := defrag.RandomProblem(seed)
		if err != nil {
			t.Fatal(err)
		}
		method := "greedy"
		if seed%3 == 2 {
			method = "random"
		}
		planner, err := defrag.NewPlanner(method)
		if err != nil {
			t.Fatal(err)
		}
		p, err := defrag.Best(pr, planner, 1, seed)
		if err != nil {
			t.Fatal(err)
		}
		if err := defrag.WriteLog(filepath.Join(dir, fmt.Sprintf("d%02d.jsonl", seed)), pr, p, map[string]string{"policy": method}); err != nil {
			t.Fatal(err)
		}
		probs, plans = append(probs, pr), append(plans, p)
	}
	return probs, plans
}

func defragOptions(logs, out string) BuildOptions {
	o := testOptions(logs, out)
	o.Env = env.DefragName
	o.Defrag = env.DefragOptions{RewardFragment: 1, RewardPending: 1, MigrationCost: 0.1}
	return o
}

// TestDefragDatasetRoundTrip: migration logs of random states become two rows per migration
// (plus STOP when a plan ends early); reading them back rebuilds, through env.Defrag, exactly
// the observations and rewards the expert's plan produces in the environment, and the stored
// masks match the rebuilt ones (the reader checks every one).
func TestDefragDatasetRoundTrip(t *testing.T) {
	dir := t.TempDir()
	probs, plans := defragDemos(t, dir, 9)
	out := filepath.Join(dir, "ds")
	m, _, err := Build(defragOptions(filepath.Join(dir, "*.jsonl"), out))
	if err != nil {
		t.Fatal(err)
	}
	if m.Env != env.DefragName || m.FeatureSpec != env.DefragSpec {
		t.Fatalf("manifest env %s %s", m.Env, m.FeatureSpec)
	}
	d, err := OpenEnv(out, env.DefragName)
	if err != nil {
		t.Fatal(err)
	}
	stops := 0
	for k, ep := range d.Manifest.Episodes {
		var want []defrag.Labelled
		if _, err := defrag.ExpertActions(probs[k], plans[k], func(l defrag.Labelled) { want = append(want, l) }); err != nil {
			t.Fatal(err)
		}
		if rows := 2 * len(plans[k].Steps); ep.Rows != int64(rows) && ep.Rows != int64(rows+1) {
			t.Fatalf("episode %d: %d rows for %d migrations", k, ep.Rows, len(plans[k].Steps))
		}
		var got int
		err := d.ReadEpisode(ep, func(s *Sample) error {
			w := want[got]
			switch {
			case int(s.Row.Stage) != w.Obs.Stage || s.Obs.Stage != w.Obs.Stage:
				return fmt.Errorf("step %d: stage %d/%d, expert's %d", got, s.Row.Stage, s.Obs.Stage, w.Obs.Stage)
			case int(s.Row.Action) != w.Action.Candidate:
				return fmt.Errorf("step %d: action %d, expert's %d", got, s.Row.Action, w.Action.Candidate)
			case !slices.Equal(s.Obs.Nodes, w.Obs.Nodes) || !slices.Equal(s.Obs.Mask, w.Obs.Mask) ||
				!slices.Equal(s.Obs.Global, w.Obs.Global) || !slices.Equal(s.Obs.Task, w.Obs.Task):
				return fmt.Errorf("step %d: rebuilt observation differs from the expert's", got)
			case s.Row.Reward != float32(w.Reward):
				return fmt.Errorf("step %d: reward %v, environment's %v", got, s.Row.Reward, w.Reward)
			case s.Row.Done != (got == len(want)-1):
				return fmt.Errorf("step %d: done %v", got, s.Row.Done)
			}
			if s.Row.Stage == 0 && int(s.Row.Action) == s.Obs.NumNodes-1 {
				stops++
			}
			got++
			return nil
		})
		if err != nil {
			t.Fatalf("episode %d: %v", k, err)
		}
		if got != len(want) {
			t.Fatalf("episode %d: read %d steps, expert made %d", k, got, len(want))
		}
	}
	if stops == 0 {
		t.Fatal("no plan ended with STOP: the test states do not cover it")
	}
	// Batches start chunks mid-episode (replaying earlier actions) and pad both stages' rows.
	o := DefaultBatchOptions(SplitTrain, 7)
	o.ChunkRows, o.Open = 3, 2
	b, err := d.Batches(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n := int64(0)
	for {
		bt, err := b.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += int64(bt.Size)
	}
	if n != d.Manifest.Splits[SplitTrain].Rows {
		t.Fatalf("batches held %d rows, split has %d", n, d.Manifest.Splits[SplitTrain].Rows)
	}
}

// TestDatasetEnvMismatchRefused: a reader of one environment refuses the other's dataset, and a
// placement log is not a migration log.
func TestDatasetEnvMismatchRefused(t *testing.T) {
	dir := t.TempDir()
	defragDemos(t, dir, 2)
	out := filepath.Join(dir, "ds")
	if _, _, err := Build(defragOptions(filepath.Join(dir, "*.jsonl"), out)); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenEnv(out, env.PlacementName); err == nil || !strings.Contains(err.Error(), "holds defrag transitions") {
		t.Fatalf("placement reader opened a defrag dataset: %v", err)
	}
	d, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Context(d.Manifest.Episodes[0]); err == nil {
		t.Fatal("placement context of a defrag episode")
	}

	pdir := t.TempDir()
	writeFile(t, filepath.Join(pdir, "p.jsonl"), makeRun(t, 30, 1.3, 1).log)
	pout := filepath.Join(pdir, "ds")
	if _, _, err := Build(testOptions(filepath.Join(pdir, "*.jsonl"), pout)); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenEnv(pout, env.DefragName); err == nil || !strings.Contains(err.Error(), "holds placement transitions") {
		t.Fatalf("defrag reader opened a placement dataset: %v", err)
	}
	_, _, err = Build(defragOptions(filepath.Join(pdir, "*.jsonl"), filepath.Join(pdir, "ds2")))
	if err == nil || !strings.Contains(err.Error(), "p.jsonl: line 1: header meta budget") {
		t.Fatalf("placement log built as defrag: %v", err)
	}
}
