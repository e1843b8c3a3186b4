package online

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/env"
)

// Demos runs tl with the named method under cfg and writes every invocation (its snapshot,
// waiting tasks and the method's plan, an empty one included: the method chose to stop) as a
// migration log in dir, dir/<prefix>-NNNN.jsonl: the demonstrations `datasets build --env
// defrag` turns into transitions of the defrag environment, whose observation the
// defrag-online agent sees at each invocation. It returns the logs written. Use training
// seeds, never the held-out timelines the methods are compared on.
func Demos(tl Timeline, cfg Config, method string, opts env.DefragOptions, dir, prefix string) ([]string, error) {
	p, err := NewPlanner(method)
	if err != nil {
		return nil, err
	}
	w, err := tl.Build()
	if err != nil {
		return nil, err
	}
	rec := &recorder{p: p, opts: opts, dir: dir, prefix: prefix, meta: map[string]string{"protocol": "defrag-online-demos",
		"policy": p.Name(), "load": strconv.FormatFloat(tl.Load, 'g', -1, 64), "timeline_seed": strconv.FormatUint(tl.Seed, 10)}}
	d, err := New(cfg, rec, w.Placer, tl.Seed)
	if err != nil {
		return nil, err
	}
	if _, err := w.Run(tl, d, 0); err != nil {
		return rec.logs, err
	}
	return rec.logs, nil
}

// recorder plans with p and writes each invocation's problem and plan as a log.
type recorder struct {
	p           Planner
	opts        env.DefragOptions
	dir, prefix string
	meta        map[string]string
	logs        []string
}

func (r *recorder) Name() string { return r.p.Name() }

func (r *recorder) Plan(s Snapshot, budget int, rng *rand.Rand) ([]defrag.Migration, error) {
	opts := r.opts
	opts.Budget = budget
	pr := defrag.Problem{Cluster: s.Cluster.Clone(), Pending: s.Waiting, Placer: s.Placer, Options: opts}
	ms, err := r.p.Plan(s, budget, rng)
	if err != nil {
		return nil, err
	}
	plan, err := defrag.Replay(pr, r.p.Name(), ms)
	if err != nil {
		return nil, fmt.Errorf("invocation at %v s: %w", s.Now, err)
	}
	path := filepath.Join(r.dir, fmt.Sprintf("%s-%04d.jsonl", r.prefix, len(r.logs)))
	meta := map[string]string{"time_s": strconv.FormatFloat(s.Now, 'f', 0, 64)}
	for k, v := range r.meta {
		meta[k] = v
	}
	if err := defrag.WriteLog(path, pr, plan, meta); err != nil {
		return nil, err
	}
	r.logs = append(r.logs, path)
	return ms, nil
}
