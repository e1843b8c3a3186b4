package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The stages below do real (small) work on real files: text -> word count -> a deterministic
// "training" loop that checkpoints every step and can resume -> a report.

type textConfig struct{ Text string }

type textStage struct {
	cfg  textConfig
	runs *int
}

func (s textStage) Name() string     { return "text" }
func (s textStage) Inputs() []string { return nil }
func (s textStage) Config() any      { return s.cfg }
func (s textStage) Run(_ context.Context, env Env) (Result, error) {
	*s.runs++
	return Result{}, os.WriteFile(filepath.Join(env.OutDir, "text.txt"), []byte(s.cfg.Text), 0o644)
}

// countStage counts words; MinLen filters short ones, so some config changes leave its output
// unchanged (and downstream cached).
type countConfig struct{ MinLen int }

type countStage struct {
	cfg  countConfig
	runs *int
	fail error
}

func (s countStage) Name() string     { return "count" }
func (s countStage) Inputs() []string { return []string{"text"} }
func (s countStage) Config() any      { return s.cfg }
func (s countStage) Run(_ context.Context, env Env) (Result, error) {
	*s.runs++
	data, err := os.ReadFile(filepath.Join(env.Inputs["text"].Dir, "text.txt"))
	if err != nil {
		return Result{}, err
	}
	if err := os.WriteFile(filepath.Join(env.OutDir, "junk.txt"), []byte("half"), 0o644); err != nil {
		return Result{}, err
	}
	if s.fail != nil {
		return Result{}, s.fail
	}
	n := 0
	for _, w := range strings.Fields(string(data)) {
		if len(w) >= s.cfg.MinLen {
			n++
		}
	}
	os.Remove(filepath.Join(env.OutDir, "junk.txt"))
	return Result{Metric: &Metric{Name: "words", Value: float64(n)}},
		os.WriteFile(filepath.Join(env.OutDir, "count.txt"), []byte(strconv.Itoa(n)), 0o644)
}

// trainStage runs Steps deterministic steps from the count, checkpointing state after each;
// it resumes from the checkpoint. stopAfter > 0 makes it fail after that many steps of this
// invocation; hook, when set, runs after each step (the kill test blocks there).
type trainConfig struct{ Steps, Seed int }

type trainStage struct {
	cfg       trainConfig
	runs      *int
	stopAfter int
	hook      func(step int)
	resumedAt *int
}

func (s trainStage) Name() string     { return "train" }
func (s trainStage) Inputs() []string { return []string{"count"} }
func (s trainStage) Config() any      { return s.cfg }
func (s trainStage) Resumable() bool  { return true }
func (s trainStage) Run(ctx context.Context, env Env) (Result, error) {
	*s.runs++
	data, err := os.ReadFile(filepath.Join(env.Inputs["count"].Dir, "count.txt"))
	if err != nil {
		return Result{}, err
	}
	count, _ := strconv.Atoi(string(data))
	ckpt := filepath.Join(env.OutDir, "ckpt.txt")
	step, state := 0, uint64(s.cfg.Seed)
	if env.Resumed {
		b, err := os.ReadFile(ckpt)
		if err != nil {
			return Result{}, fmt.Errorf("resume: %w", err)
		}
		if _, err := fmt.Sscanf(string(b), "%d %d", &step, &state); err != nil {
			return Result{}, fmt.Errorf("resume %s: %w", ckpt, err)
		}
	}
	if s.resumedAt != nil {
		*s.resumedAt = step
	}
	env.Progress.Start(int64(s.cfg.Steps), "steps")
	for done := 0; step < s.cfg.Steps; done++ {
		if s.stopAfter > 0 && done == s.stopAfter {
			return Result{}, errors.New("simulated crash")
		}
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		state = state*6364136223846793005 + uint64(count) + uint64(step)
		step++
		tmp := ckpt + ".tmp"
		if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d %d", step, state)), 0o644); err != nil {
			return Result{}, err
		}
		if err := os.Rename(tmp, ckpt); err != nil {
			return Result{}, err
		}
		env.Progress.Add(1)
		if s.hook != nil {
			s.hook(step)
		}
	}
	return Result{Metric: &Metric{Name: "state_mod_1000", Value: float64(state % 1000)}},
		os.WriteFile(filepath.Join(env.OutDir, "model.txt"), []byte(strconv.FormatUint(state, 10)), 0o644)
}

type reportStage struct{ runs *int }

func (s reportStage) Name() string     { return "report" }
func (s reportStage) Inputs() []string { return []string{"count", "train"} }
func (s reportStage) Config() any      { return map[string]int{"version": 1} }
func (s reportStage) Run(_ context.Context, env Env) (Result, error) {
	*s.runs++
	c, err := os.ReadFile(filepath.Join(env.Inputs["count"].Dir, "count.txt"))
	if err != nil {
		return Result{}, err
	}
	m, err := os.ReadFile(filepath.Join(env.Inputs["train"].Dir, "model.txt"))
	if err != nil {
		return Result{}, err
	}
	return Result{Note: "ok"}, os.WriteFile(filepath.Join(env.OutDir, "report.txt"), []byte(string(c)+" "+string(m)), 0o644)
}

// world is one configuration of the test pipeline plus run counters per stage.
type world struct {
	text  textConfig
	count countConfig
	train trainConfig
	runs  map[string]*int

	countFail      error
	trainStopAfter int
	trainHook      func(int)
	resumedAt      int
}

func newWorld() *world {
	w := &world{
		text:  textConfig{"the quick brown fox jumps over the lazy dog"},
		count: countConfig{MinLen: 1},
		train: trainConfig{Steps: 20, Seed: 7},
		runs:  map[string]*int{},
	}
	for _, n := range []string{"text", "count", "train", "report"} {
		w.runs[n] = new(int)
	}
	return w
}

func (w *world) pipeline(t testing.TB) *Pipeline {
	t.Helper()
	p, err := New(
		textStage{w.text, w.runs["text"]},
		countStage{w.count, w.runs["count"], w.countFail},
		trainStage{w.train, w.runs["train"], w.trainStopAfter, w.trainHook, &w.resumedAt},
		reportStage{w.runs["report"]},
	)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (w *world) resetRuns() {
	for _, n := range w.runs {
		*n = 0
	}
}

// ran lists the stages that ran since the last reset, in graph order.
func (w *world) ran() string {
	var out []string
	for _, n := range []string{"text", "count", "train", "report"} {
		if *w.runs[n] > 0 {
			out = append(out, n)
		}
	}
	return strings.Join(out, ",")
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func opts(dir string) Options {
	return Options{Dir: dir, CodeRevision: "rev1", Log: quietLog()}
}

func statuses(rec *Record) string {
	var out []string
	for _, s := range rec.Stages {
		out = append(out, s.Name+"="+s.Status)
	}
	return strings.Join(out, ",")
}

func TestCachingAndInvalidation(t *testing.T) {
	tests := []struct {
		name   string
		change func(w *world, o *Options)
		ran    string // stages that run again after the change
	}{
		{"same config skips everything", func(*world, *Options) {}, ""},
		{"changed upstream config reruns it and downstream", func(w *world, _ *Options) { w.text.Text = "a b c" }, "text,count,train,report"},
		{"changed middle config reruns from there", func(w *world, _ *Options) { w.count.MinLen = 4 }, "count,train,report"},
		{"config change with identical output keeps downstream", func(w *world, _ *Options) { w.count.MinLen = 0 }, "count"},
		{"changed last-but-one config", func(w *world, _ *Options) { w.train.Steps = 21 }, "train,report"},
		{"code revision reruns everything", func(_ *world, o *Options) { o.CodeRevision = "rev2" }, "text,count,train,report"},
		{"force reruns one stage; same output keeps downstream", func(_ *world, o *Options) { o.Force = []string{"count"} }, "count"},
		{"from reruns the stage and everything after", func(_ *world, o *Options) { o.From = "count" }, "count,train,report"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w := newWorld()
			first, err := w.pipeline(t).Run(context.Background(), opts(dir))
			if err != nil {
				t.Fatal(err)
			}
			if got := statuses(first); got != "text=done,count=done,train=done,report=done" {
				t.Fatalf("first run: %s", got)
			}
			w.resetRuns()
			o := opts(dir)
			tc.change(w, &o)
			rec, err := w.pipeline(t).Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if got := w.ran(); got != tc.ran {
				t.Errorf("ran %q, want %q (%s)", got, tc.ran, statuses(rec))
			}
			for _, s := range rec.Stages {
				if s.Status != StatusDone && s.Status != StatusCached {
					t.Errorf("stage %s: %s", s.Name, s.Status)
				}
				ranNow := strings.Contains(","+tc.ran+",", ","+s.Name+",")
				if ranNow != (s.Status == StatusDone) {
					t.Errorf("stage %s status %s but ran=%v", s.Name, s.Status, ranNow)
				}
			}
			if rec.Status != RunOK {
				t.Errorf("run status %s", rec.Status)
			}
		})
	}
}

func TestFailureKeepsNothingAndRerunContinues(t *testing.T) {
	dir := t.TempDir()
	w := newWorld()
	w.countFail = errors.New("disk on fire")
	rec, err := w.pipeline(t).Run(context.Background(), opts(dir))
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v", err)
	}
	if got := statuses(rec); got != "text=done,count=failed,train=blocked,report=blocked" {
		t.Fatalf("statuses %s", got)
	}
	if rec.Status != RunFailed {
		t.Errorf("run status %s", rec.Status)
	}
	// The failed, non-resumable stage leaves no partial output and no key directory.
	entries, _ := os.ReadDir(filepath.Join(dir, "stages", "count"))
	if len(entries) != 0 {
		t.Errorf("failed stage left %v", entries)
	}
	saved, err := LoadRecord(dir, "")
	if err != nil || saved.Stages[1].Error == "" || saved.Status != RunFailed {
		t.Fatalf("saved record %+v, %v", saved, err)
	}

	w.countFail = nil
	w.resetRuns()
	if _, err := w.pipeline(t).Run(context.Background(), opts(dir)); err != nil {
		t.Fatal(err)
	}
	if got := w.ran(); got != "count,train,report" {
		t.Errorf("after fix ran %q", got)
	}
}

func TestResumeAfterFailure(t *testing.T) {
	dir := t.TempDir()
	w := newWorld()
	w.trainStopAfter = 8
	if _, err := w.pipeline(t).Run(context.Background(), opts(dir)); err == nil {
		t.Fatal("expected the simulated crash")
	}
	w.trainStopAfter = 0
	rec, err := w.pipeline(t).Run(context.Background(), opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Stages[2].Resumed || w.resumedAt != 8 {
		t.Errorf("train resumed=%v at step %d, want resumed at 8", rec.Stages[2].Resumed, w.resumedAt)
	}
	want := uninterruptedOutput(t, newWorld())
	if got := rec.Stages[3].Output.Hash; got != want {
		t.Errorf("resumed report hash %s, uninterrupted %s", got, want)
	}
}

// uninterruptedOutput runs w's pipeline once in a fresh directory and returns the report's hash.
func uninterruptedOutput(t *testing.T, w *world) string {
	t.Helper()
	rec, err := w.pipeline(t).Run(context.Background(), opts(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return rec.Stages[len(rec.Stages)-1].Output.Hash
}

func TestForcedResumableStageStartsOver(t *testing.T) {
	dir := t.TempDir()
	w := newWorld()
	w.trainStopAfter = 5
	w.pipeline(t).Run(context.Background(), opts(dir))
	w.trainStopAfter = 0
	o := opts(dir)
	o.Force = []string{"train"}
	rec, err := w.pipeline(t).Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Stages[2].Resumed || w.resumedAt != 0 || !rec.Stages[2].Forced {
		t.Errorf("forced train: resumed=%v at %d forced=%v", rec.Stages[2].Resumed, w.resumedAt, rec.Stages[2].Forced)
	}
}

func TestTamperedOutputIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	w := newWorld()
	rec, err := w.pipeline(t).Run(context.Background(), opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rec.Stages[1].Output.Dir, "count.txt"), []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.resetRuns()
	rec, err = w.pipeline(t).Run(context.Background(), opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.ran(); got != "count" {
		t.Errorf("ran %q after tampering, want count only", got)
	}
	if !strings.Contains(rec.Stages[1].Reason, "count.txt changed size") {
		t.Errorf("reason %q", rec.Stages[1].Reason)
	}
}

func TestConcurrentRunRefused(t *testing.T) {
	dir := t.TempDir()
	w := newWorld()
	w.trainHook = func(step int) {
		if step != 3 {
			return
		}
		_, err := newWorld().pipeline(t).Run(context.Background(), opts(dir))
		if err == nil || !strings.Contains(err.Error(), "another pipeline run holds") {
			t.Errorf("second run while the first holds the lock: %v", err)
		}
	}
	if _, err := w.pipeline(t).Run(context.Background(), opts(dir)); err != nil {
		t.Fatal(err)
	}
}

func TestCancelledRunIsInterrupted(t *testing.T) {
	dir := t.TempDir()
	w := newWorld()
	ctx, cancel := context.WithCancel(context.Background())
	w.trainHook = func(step int) {
		if step == 4 {
			cancel()
		}
	}
	rec, err := w.pipeline(t).Run(ctx, opts(dir))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if got := statuses(rec); got != "text=done,count=done,train=interrupted,report=pending" || rec.Status != RunInterrupted {
		t.Errorf("statuses %s, run %s", got, rec.Status)
	}
	w.trainHook = nil
	if _, err := w.pipeline(t).Run(context.Background(), opts(dir)); err != nil {
		t.Fatal(err)
	}
	if w.resumedAt != 4 {
		t.Errorf("resumed at %d, want 4", w.resumedAt)
	}
}

func TestGraphValidation(t *testing.T) {
	w := newWorld()
	tests := []struct {
		name   string
		stages []Stage
		want   string
	}{
		{"input not earlier", []Stage{countStage{w.count, w.runs["count"], nil}, textStage{w.text, w.runs["text"]}}, `"count" reads "text"`},
		{"duplicate", []Stage{textStage{w.text, w.runs["text"]}, textStage{w.text, w.runs["text"]}}, "appears twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.stages...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	o := opts(t.TempDir())
	o.Force = []string{"nope"}
	if _, err := w.pipeline(t).Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), `unknown stage "nope"`) {
		t.Errorf("unknown --force stage: %v", err)
	}
}

func TestPlan(t *testing.T) {
	dir := t.TempDir()
	w := newWorld()
	w.trainStopAfter = 3
	w.pipeline(t).Run(context.Background(), opts(dir))
	w.trainStopAfter = 0
	plan, err := w.pipeline(t).Plan(opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range plan {
		got = append(got, e.Stage+"="+e.State)
	}
	if want := "text=cached,count=cached,train=will resume,report=will run"; strings.Join(got, ",") != want {
		t.Errorf("plan %s, want %s", strings.Join(got, ","), want)
	}
	if plan[3].Key != "" {
		t.Errorf("report key known before train is built: %s", plan[3].Key)
	}
}

func TestSummaryTable(t *testing.T) {
	dir := t.TempDir()
	w := newWorld()
	rec, err := w.pipeline(t).Run(context.Background(), opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rec.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"STAGE", "count", "done", "words=9", "report", "run " + rec.RunID} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// outsideStage publishes its text to a file outside its output directory (as publish does to
// the registry) and records where.
type outsideStage struct {
	path string
	runs *int
}

func (s outsideStage) Name() string     { return "outside" }
func (s outsideStage) Inputs() []string { return []string{"text"} }
func (s outsideStage) Config() any      { return s.path }
func (s outsideStage) Run(_ context.Context, env Env) (Result, error) {
	*s.runs++
	data, err := os.ReadFile(filepath.Join(env.Inputs["text"].Dir, "text.txt"))
	if err != nil {
		return Result{}, err
	}
	if err := os.WriteFile(s.path, data, 0o644); err != nil {
		return Result{}, err
	}
	return Result{}, os.WriteFile(filepath.Join(env.OutDir, "where"), []byte(s.path), 0o644)
}

func (s outsideStage) Missing(_ context.Context, out Output) (string, error) {
	where, err := os.ReadFile(filepath.Join(out.Dir, "where"))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(string(where)); err != nil {
		return string(where) + " is gone", nil
	}
	return "", nil
}

// A cached stage whose outside output was deleted runs again; one whose output is there
// stays cached, in a run and in the plan.
func TestExternalOutputMustStillExist(t *testing.T) {
	dir, outside := t.TempDir(), filepath.Join(t.TempDir(), "published")
	var textRuns, outsideRuns int
	p, err := New(textStage{textConfig{"a b"}, &textRuns}, outsideStage{outside, &outsideRuns})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 1} {
		if _, err := p.Run(context.Background(), opts(dir)); err != nil {
			t.Fatal(err)
		}
		if outsideRuns != want {
			t.Fatalf("run %d: the outside stage ran %d times, want %d", i+1, outsideRuns, want)
		}
	}
	if err := os.Remove(outside); err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if e := plan[1]; e.State != PlanStale || !strings.Contains(e.Reason, "is gone") {
		t.Errorf("plan after deleting the outside output: %+v", e)
	}
	rec, err := p.Run(context.Background(), opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if outsideRuns != 2 || textRuns != 1 {
		t.Errorf("after deleting the outside output: outside ran %d times, text %d; want 2 and 1 (%s)", outsideRuns, textRuns, statuses(rec))
	}
	if !strings.Contains(rec.Stages[1].Reason, "is gone") {
		t.Errorf("reason %q does not say why", rec.Stages[1].Reason)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("not published again: %v", err)
	}
}
