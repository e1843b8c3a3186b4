package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// Pipeline is a validated stage graph, in execution order.
type Pipeline struct {
	stages []Stage
	index  map[string]int
}

// New checks the graph: unique names, and every input names an earlier stage.
func New(stages ...Stage) (*Pipeline, error) {
	p := &Pipeline{stages: stages, index: make(map[string]int, len(stages))}
	for i, s := range stages {
		name := s.Name()
		if name == "" || strings.ContainsAny(name, `/\. `) {
			return nil, fmt.Errorf("stage %d: invalid name %q", i, name)
		}
		if _, dup := p.index[name]; dup {
			return nil, fmt.Errorf("stage %q appears twice", name)
		}
		for _, in := range s.Inputs() {
			if _, ok := p.index[in]; !ok {
				return nil, fmt.Errorf("stage %q reads %q, which is not an earlier stage of the pipeline", name, in)
			}
		}
		p.index[name] = i
	}
	return p, nil
}

// Names lists the stages in execution order.
func (p *Pipeline) Names() []string {
	names := make([]string, len(p.stages))
	for i, s := range p.stages {
		names[i] = s.Name()
	}
	return names
}

// Options control one run.
type Options struct {
	Dir          string   // pipeline directory: cache and run records
	CodeRevision string   // enters every key
	Force        []string // rerun these stages even when cached
	From         string   // rerun this stage and every later one
	ConfigFile   string   // for the run record
	Log          *slog.Logger
	Terminal     bool      // draw progress bars instead of logging progress lines
	ProgressOut  io.Writer // where bars go (default stderr)
}

// ErrIncomplete is returned (wrapped) when the run ended without every stage complete.
var ErrIncomplete = errors.New("pipeline incomplete")

func (p *Pipeline) checkOptions(o *Options) error {
	if o.Dir == "" {
		return errors.New("pipeline directory is empty")
	}
	if o.CodeRevision == "" {
		return errors.New("code revision is empty")
	}
	for _, f := range append(append([]string{}, o.Force...), o.From) {
		if _, ok := p.index[f]; f != "" && !ok {
			return fmt.Errorf("unknown stage %q (stages: %s)", f, strings.Join(p.Names(), ", "))
		}
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.ProgressOut == nil {
		o.ProgressOut = os.Stderr
	}
	return nil
}

// Run executes the graph in order, skipping stages whose key has a complete output. The
// returned record is also saved under Dir/runs. The error is non-nil unless every stage ended
// cached or done.
func (p *Pipeline) Run(ctx context.Context, o Options) (*Record, error) {
	if err := p.checkOptions(&o); err != nil {
		return nil, err
	}
	st := store{root: o.Dir}
	release, err := st.lock()
	if err != nil {
		return nil, err
	}
	defer release()

	rec := &Record{
		RunID:        time.Now().UTC().Format("20060102T150405.000Z"),
		ConfigFile:   o.ConfigFile,
		CodeRevision: o.CodeRevision,
		Started:      time.Now().UTC(),
		Status:       RunRunning,
	}
	for _, s := range p.stages {
		rec.Stages = append(rec.Stages, StageRecord{Name: s.Name(), Status: StatusPending, Inputs: s.Inputs()})
	}
	if err := rec.save(o.Dir); err != nil {
		return nil, err
	}

	r := runner{p: p, o: o, st: st, rec: rec, outputs: map[string]Output{}}
	runErr := r.all(ctx)
	now := time.Now().UTC()
	rec.Finished = &now
	rec.Status = r.runStatus(runErr)
	if err := rec.save(o.Dir); err != nil && runErr == nil {
		runErr = err
	}
	return rec, runErr
}

type runner struct {
	p       *Pipeline
	o       Options
	st      store
	rec     *Record
	outputs map[string]Output // complete outputs so far, by stage
}

func (r *runner) all(ctx context.Context) error {
	from := len(r.p.stages)
	if r.o.From != "" {
		from = r.p.index[r.o.From]
	}
	var problems []string
	for i, s := range r.p.stages {
		sr := &r.rec.Stages[i]
		if err := ctx.Err(); err != nil {
			return err
		}
		inputs, missing := r.inputs(s)
		if missing != "" {
			sr.Status = StatusBlocked
			sr.Note = "input " + missing + " did not complete"
			continue
		}
		forced := i >= from || slices.Contains(r.o.Force, s.Name())
		if err := r.stage(ctx, i, s, inputs, forced); err != nil {
			if ctx.Err() != nil {
				sr.Status = StatusInterrupted
				r.saveRecord()
				return ctx.Err()
			}
			sr.Status = StatusFailed
			sr.Error = err.Error()
			r.o.Log.Error("stage failed", "stage", s.Name(), "err", err)
			problems = append(problems, err.Error())
		}
		r.saveRecord()
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrIncomplete, strings.Join(problems, "; "))
	}
	return nil
}

func (r *runner) inputs(s Stage) ([]Output, string) {
	var ins []Output
	for _, name := range s.Inputs() {
		out, ok := r.outputs[name]
		if !ok {
			return nil, name
		}
		ins = append(ins, out)
	}
	return ins, ""
}

// stage runs or skips one stage; sr is updated in place.
func (r *runner) stage(ctx context.Context, i int, s Stage, inputs []Output, forced bool) error {
	sr := &r.rec.Stages[i]
	log := r.o.Log.With("stage", s.Name())
	start := time.Now()
	key, err := stageKey(s.Name(), s.Config(), inputs, r.o.CodeRevision)
	if err != nil {
		return err
	}
	sr.Key = key
	c, why, err := r.st.lookup(s.Name(), key)
	if err != nil {
		return err
	}
	if c != nil && !forced {
		if why, err = missingOutside(ctx, s, r.st.output(c)); err != nil {
			return err
		} else if why != "" {
			c = nil
		}
	}
	if c != nil && !forced {
		r.done(sr, c, StatusCached, start)
		sr.BuiltIn = &c.Seconds
		log.Info("stage cached", "key", key, "built_seconds", c.Seconds)
		return nil
	}
	switch {
	case forced:
		why = "forced"
	case why == "":
		why = "no complete output for this key"
	}
	sr.Forced, sr.Reason = forced, why

	resumable := false
	if rs, ok := s.(Resumable); ok {
		resumable = rs.Resumable() && !forced
	}
	outDir, resumed, err := r.st.prepare(s.Name(), key, resumable)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	sr.Status, sr.Started, sr.Resumed = StatusRunning, &now, resumed
	r.saveRecord()
	log.Info("stage start", "key", key, "reason", why, "resumed", resumed, "step", fmt.Sprintf("%d/%d", i+1, len(r.p.stages)))

	in := make(map[string]Output, len(inputs))
	for _, o := range inputs {
		in[o.Stage] = o
	}
	label := s.Name()
	if r.o.Terminal {
		label = fmt.Sprintf("[%d/%d] %s", i+1, len(r.p.stages), s.Name())
	}
	prog := newProgress(r.o.Terminal, r.o.ProgressOut, r.o.Log, label)
	res, err := s.Run(ctx, Env{Inputs: in, Upstream: maps.Clone(r.outputs), OutDir: outDir, Resumed: resumed, Progress: prog, Terminal: r.o.Terminal, Log: log})
	prog.finish()
	sr.Seconds = time.Since(start).Seconds()
	if err != nil {
		if !resumable {
			r.st.discard(s.Name(), key)
		}
		return fmt.Errorf("%s: %w", s.Name(), err)
	}
	files, hash, err := hashTree(outDir)
	if err != nil {
		return fmt.Errorf("%s: hash output: %w", s.Name(), err)
	}
	c = &completion{
		Stage: s.Name(), Key: key, Hash: hash, Inputs: inputs, CodeRevision: r.o.CodeRevision,
		Finished: time.Now().UTC(), Seconds: time.Since(start).Seconds(), Result: res, Files: files,
	}
	if err := r.st.commit(c); err != nil {
		return fmt.Errorf("%s: commit output: %w", s.Name(), err)
	}
	r.done(sr, c, StatusDone, start)
	log.Info("stage done", "key", key, "seconds", sr.Seconds, "files", sr.Files)
	return nil
}

func (r *runner) done(sr *StageRecord, c *completion, status string, start time.Time) {
	out := r.st.output(c)
	r.outputs[c.Stage] = out
	now := time.Now().UTC()
	sr.Status, sr.Output, sr.Finished = status, &out, &now
	sr.Seconds = time.Since(start).Seconds()
	sr.Metric, sr.Note = c.Result.Metric, c.Result.Note
	sr.Files, sr.Bytes = len(c.Files), 0
	for _, f := range c.Files {
		sr.Bytes += f.Size
	}
}

func (r *runner) saveRecord() {
	if err := r.rec.save(r.o.Dir); err != nil {
		r.o.Log.Error("save run record", "err", err)
	}
}

func (r *runner) runStatus(err error) string {
	switch {
	case err == nil:
		return RunOK
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return RunInterrupted
	}
	for _, s := range r.rec.Stages {
		if s.Status == StatusFailed {
			return RunFailed
		}
	}
	return RunIncomplete
}

// externalTimeout bounds the check of a stage's outside output (a registry read).
const externalTimeout = 30 * time.Second

// missingOutside is what of a cached output's outside copy is gone ("" when the stage does not
// implement External or nothing is).
func missingOutside(ctx context.Context, s Stage, out Output) (string, error) {
	ext, ok := s.(External)
	if !ok {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, externalTimeout)
	defer cancel()
	why, err := ext.Missing(ctx, out)
	if err != nil {
		return "", fmt.Errorf("stage %s: check its cached output: %w", s.Name(), err)
	}
	return why, nil
}
