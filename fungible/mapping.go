package fungible

import (
	"encoding/csv"
	"errors"
	"fmt"
	"github.com/schedrl/schedrl/internal/inputfile"
	"io"
	"sort"
	"strings"
)

// mapping is a three-column table key,value,reason (data/fungible/*.csv): every row says why.
type mapping struct {
	path  string
	value map[string]string
	line  map[string]int
}

func readMapping(path string, header [3]string) (*mapping, error) {
	f, err := inputfile.Open(path, inputfile.Table)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = 3
	head, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s:1: empty file, want header %s", path, strings.Join(header[:], ","))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if [3]string(head) != header {
		return nil, fmt.Errorf("%s:1: header %s, want %s", path, strings.Join(head, ","), strings.Join(header[:], ","))
	}
	m := &mapping{path: path, value: map[string]string{}, line: map[string]int{}}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		for i, v := range rec {
			if strings.TrimSpace(v) == "" {
				return nil, fmt.Errorf("%s:%d: empty %s", path, line, header[i])
			}
		}
		if prev, dup := m.line[rec[0]]; dup {
			return nil, fmt.Errorf("%s:%d: %s %q repeated (first on line %d)", path, line, header[0], rec[0], prev)
		}
		m.value[rec[0]], m.line[rec[0]] = rec[1], line
	}
	if len(m.value) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	return m, nil
}

func (m *mapping) keys() []string {
	out := make([]string, 0, len(m.value))
	for k := range m.value {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Sensitivity maps each Gavel job type to the Synergy profile closest to it
// (data/fungible/gavel_synergy_models.csv).
type Sensitivity struct {
	path    string
	profile map[string]Profile
}

// LoadSensitivity reads a job_type,synergy_model,reason table; every model it names must have a
// profile in p or be FlatModel.
func LoadSensitivity(path string, p *Profiles) (*Sensitivity, error) {
	m, err := readMapping(path, [3]string{"job_type", "synergy_model", "reason"})
	if err != nil {
		return nil, err
	}
	s := &Sensitivity{path: path, profile: map[string]Profile{}}
	for jobType, model := range m.value {
		prof, err := p.Profile(model)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: job type %q: %w", path, m.line[jobType], jobType, err)
		}
		s.profile[jobType] = prof
	}
	return s, nil
}

// Profile is the job type's profile; a job type the table does not list is an error naming it
// (the table gives the flat profile only to the types it maps to FlatModel).
func (s *Sensitivity) Profile(jobType string) (Profile, error) {
	prof, ok := s.profile[jobType]
	if !ok {
		return Profile{}, fmt.Errorf("job type %q has no Synergy mapping in %s (map it to a model or to %q there)", jobType, s.path, FlatModel)
	}
	return prof, nil
}

// JobTypes lists the mapped job types, sorted.
func (s *Sensitivity) JobTypes() []string {
	out := make([]string, 0, len(s.profile))
	for k := range s.profile {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// LoadOpenbClasses reads a model,class,reason table (data/fungible/openb_gpu_classes.csv) mapping
// each openb GPU model to the throughput class (GPU type of Gavel's table) it runs as.
func LoadOpenbClasses(path string) (map[string]string, error) {
	m, err := readMapping(path, [3]string{"model", "class", "reason"})
	if err != nil {
		return nil, err
	}
	for _, model := range m.keys() {
		if !isGPUType(m.value[model]) {
			return nil, fmt.Errorf("%s:%d: model %s: class %q, want one of %s", path, m.line[model], model, m.value[model], strings.Join(GPUTypes, ", "))
		}
	}
	return m.value, nil
}
