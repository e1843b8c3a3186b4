package jobs

import (
	"encoding/json"
	"fmt"
	"github.com/schedrl/schedrl/internal/inputfile"
	"regexp"
	"strconv"
)

// Throughputs is Gavel's measured table: steps per second of a job type alone on its scale
// factor's GPUs of each type, and of two job types sharing the same GPUs (co-location).
type Throughputs struct {
	alone map[JobType][NumGPUs]float64
	pairs map[[2]JobType][NumGPUs][2]float64
}

var jobTypeKey = regexp.MustCompile(`^\('(.*)', (\d+)\)$`)

func parseJobType(s string) (JobType, bool) {
	m := jobTypeKey.FindStringSubmatch(s)
	if m == nil {
		return JobType{}, false
	}
	n, err := strconv.Atoi(m[2])
	return JobType{Model: m[1], Scale: n}, err == nil
}

// LoadThroughputs reads simulation_throughputs.json; the *_unconsolidated worker types are
// ignored, as Gavel's simulator ignores them.
func LoadThroughputs(path string) (*Throughputs, error) {
	raw, err := inputfile.ReadFile(path, inputfile.Table)
	if err != nil {
		return nil, err
	}
	var doc map[string]map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t := &Throughputs{alone: map[JobType][NumGPUs]float64{}, pairs: map[[2]JobType][NumGPUs][2]float64{}}
	seen := map[JobType][NumGPUs]bool{}
	for g := range GPU(NumGPUs) {
		types, ok := doc[g.String()]
		if !ok {
			return nil, fmt.Errorf("%s: no worker type %q", path, g)
		}
		for key, entries := range types {
			jt, ok := parseJobType(key)
			if !ok {
				return nil, fmt.Errorf("%s: %s: key %q is not ('model', scale_factor)", path, g, key)
			}
			for other, v := range entries {
				if other == "null" {
					var x float64
					if err := json.Unmarshal(v, &x); err != nil {
						return nil, fmt.Errorf("%s: %s: %s: null: %w", path, g, key, err)
					}
					a := t.alone[jt]
					a[g] = x
					t.alone[jt] = a
					s := seen[jt]
					s[g] = true
					seen[jt] = s
					continue
				}
				ot, ok := parseJobType(other)
				if !ok {
					return nil, fmt.Errorf("%s: %s: %s: pair key %q is not ('model', scale_factor)", path, g, key, other)
				}
				var pair [2]float64
				if err := json.Unmarshal(v, &pair); err != nil {
					return nil, fmt.Errorf("%s: %s: %s: %s: %w", path, g, key, other, err)
				}
				p := t.pairs[[2]JobType{jt, ot}]
				p[g] = pair
				t.pairs[[2]JobType{jt, ot}] = p
			}
		}
	}
	for jt, s := range seen {
		if s != [NumGPUs]bool{true, true, true} {
			return nil, fmt.Errorf("%s: job type %s lacks a throughput on some GPU type", path, jt)
		}
	}
	return t, nil
}

// Alone is the job type's throughput (steps/s) alone on each GPU type.
func (t *Throughputs) Alone(jt JobType) ([NumGPUs]float64, bool) {
	v, ok := t.alone[jt]
	return v, ok
}

// Pair is the two job types' throughputs when they share the same GPUs of type g; [0, 0] means
// they cannot share.
func (t *Throughputs) Pair(a, b JobType, g GPU) ([2]float64, bool) {
	v, ok := t.pairs[[2]JobType{a, b}]
	return v[g], ok
}

// Len is the number of job types in the table.
func (t *Throughputs) Len() int { return len(t.alone) }
