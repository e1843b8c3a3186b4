package pipeline

import (
	"context"
	"os"
	"path/filepath"
)

// Plan states of a stage under the current configuration.
const (
	PlanCached  = "cached"      // its key has a complete output: a run skips it
	PlanStale   = "will run"    // its key has no complete output
	PlanPartial = "will resume" // an interrupted run left a partial output it resumes from
	PlanUnknown = "will run"    // an input is not built yet, so its key is not known yet
)

// PlanEntry says what a run with the current configuration would do with one stage.
type PlanEntry struct {
	Stage  string
	Key    string // empty while an input is not built
	State  string
	Reason string
}

// Plan computes, without running or locking anything, which stages are cached under the
// current configuration and code revision.
func (p *Pipeline) Plan(o Options) ([]PlanEntry, error) {
	if err := p.checkOptions(&o); err != nil {
		return nil, err
	}
	st := store{root: o.Dir}
	outputs := map[string]Output{}
	var plan []PlanEntry
	for _, s := range p.stages {
		e := PlanEntry{Stage: s.Name()}
		var inputs []Output
		for _, in := range s.Inputs() {
			out, ok := outputs[in]
			if !ok {
				e.State, e.Reason = PlanUnknown, "input "+in+" is not built yet"
				break
			}
			inputs = append(inputs, out)
		}
		if e.State == "" {
			key, err := stageKey(s.Name(), s.Config(), inputs, o.CodeRevision)
			if err != nil {
				return nil, err
			}
			e.Key = key
			c, why, err := st.lookup(s.Name(), key)
			if err != nil {
				return nil, err
			}
			if c != nil {
				if why, err = missingOutside(context.Background(), s, st.output(c)); err != nil {
					return nil, err
				} else if why != "" {
					c = nil
				}
			}
			switch {
			case c != nil:
				e.State = PlanCached
				outputs[s.Name()] = st.output(c)
			case hasPartial(st, s, key):
				e.State, e.Reason = PlanPartial, "an interrupted run left a partial output"
			default:
				e.State, e.Reason = PlanStale, why
				if why == "" {
					e.Reason = "no complete output for this key (config, inputs or code changed)"
				}
			}
		}
		plan = append(plan, e)
	}
	return plan, nil
}

func hasPartial(st store, s Stage, key string) bool {
	rs, ok := s.(Resumable)
	if !ok || !rs.Resumable() {
		return false
	}
	entries, err := os.ReadDir(filepath.Join(st.partialDir(s.Name(), key), "out"))
	return err == nil && len(entries) > 0
}
