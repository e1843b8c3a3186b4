package fungible

import (
	"encoding/json"
	"fmt"
	"github.com/schedrl/schedrl/internal/inputfile"
	"slices"
	"sort"
	"strings"
)

// FlatModel names the profile of a job no Synergy model is close to: 1.0 everywhere.
const FlatModel = "flat"

// Profiles are Synergy's per-GPU sensitivity matrices, one per model, over a shared grid of
// CPUs per GPU (rows) and GB of memory per GPU (columns).
type Profiles struct {
	CPUs, Mem []float64 // grid axes, increasing
	byModel   map[string]Profile
}

// Profile is one model's relative throughput over the grid, 1.0 at Synergy's fair share (3 CPUs,
// 62.5 GB per GPU). BestCPUs and BestMem are its best-case demand per GPU: the least resources at
// which it reaches its top throughput.
type Profile struct {
	Model             string
	BestCPUs, BestMem float64
	cpus, mem         []float64
	tput              [][]float64
}

type profileFile struct {
	Rows     []float64 `json:"tput_rows_cpus_per_gpu"`
	Cols     []float64 `json:"tput_cols_mem_gb_per_gpu"`
	Profiles map[string]struct {
		Model string      `json:"model"`
		GPUs  int         `json:"gpus"`
		CPUs  float64     `json:"cpus"`
		Mem   *float64    `json:"mem"`
		Tput  [][]float64 `json:"tput"`
	} `json:"profiles"`
}

// LoadProfiles reads data/synergy/profiles.json. Only the 1-GPU profiles (<model>_1) are used:
// Synergy's simulator applies a model's 1-GPU matrix at every GPU count. A profile without a
// `mem` field (the vendored file leaves out the ones Synergy wrote as an expression) takes the
// least memory at which its `cpus` row reaches that row's top.
func LoadProfiles(path string) (*Profiles, error) {
	raw, err := inputfile.ReadFile(path, inputfile.Table)
	if err != nil {
		return nil, err
	}
	var f profileFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for name, axis := range map[string][]float64{"tput_rows_cpus_per_gpu": f.Rows, "tput_cols_mem_gb_per_gpu": f.Cols} {
		if !increasing(axis) {
			return nil, fmt.Errorf("%s: %s = %v, want at least 2 increasing positive values", path, name, axis)
		}
	}
	p := &Profiles{CPUs: f.Rows, Mem: f.Cols, byModel: map[string]Profile{}}
	for key, e := range f.Profiles {
		if e.GPUs != 1 {
			continue
		}
		field := "profiles." + key
		if e.Model == "" || e.Model == FlatModel || key != e.Model+"_1" {
			return nil, fmt.Errorf("%s: %s: model %q does not match its key", path, field, e.Model)
		}
		if len(e.Tput) != len(f.Rows) {
			return nil, fmt.Errorf("%s: %s.tput: %d rows, want %d (one per CPUs-per-GPU value)", path, field, len(e.Tput), len(f.Rows))
		}
		for i, row := range e.Tput {
			if len(row) != len(f.Cols) {
				return nil, fmt.Errorf("%s: %s.tput row %d: %d values, want %d (one per memory value)", path, field, i+1, len(row), len(f.Cols))
			}
			for j, v := range row {
				if v <= 0 {
					return nil, fmt.Errorf("%s: %s.tput[%d][%d] = %v, want > 0", path, field, i, j, v)
				}
			}
		}
		row := slices.Index(f.Rows, e.CPUs)
		if row < 0 {
			return nil, fmt.Errorf("%s: %s.cpus = %v is not a grid row %v", path, field, e.CPUs, f.Rows)
		}
		prof := Profile{Model: e.Model, BestCPUs: e.CPUs, cpus: f.Rows, mem: f.Cols, tput: e.Tput}
		if e.Mem != nil {
			prof.BestMem = *e.Mem
		} else {
			top := slices.Max(e.Tput[row])
			prof.BestMem = f.Cols[slices.Index(e.Tput[row], top)]
		}
		p.byModel[e.Model] = prof
	}
	if len(p.byModel) == 0 {
		return nil, fmt.Errorf("%s: no 1-GPU profiles (keys <model>_1)", path)
	}
	return p, nil
}

// Models lists the models with a profile, sorted.
func (p *Profiles) Models() []string {
	out := make([]string, 0, len(p.byModel))
	for m := range p.byModel {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Profile is a model's profile; FlatModel gives the flat one, whose best case is the grid's
// lowest point.
func (p *Profiles) Profile(model string) (Profile, error) {
	if model == FlatModel {
		ones := make([][]float64, len(p.CPUs))
		for i := range ones {
			ones[i] = make([]float64, len(p.Mem))
			for j := range ones[i] {
				ones[i][j] = 1
			}
		}
		return Profile{Model: FlatModel, BestCPUs: p.CPUs[0], BestMem: p.Mem[0], cpus: p.CPUs, mem: p.Mem, tput: ones}, nil
	}
	prof, ok := p.byModel[model]
	if !ok {
		return Profile{}, fmt.Errorf("no Synergy profile %q (have %s, or %q)", model, strings.Join(p.Models(), ", "), FlatModel)
	}
	return prof, nil
}

// Lowest is the grid's lowest point (CPUs and GB per GPU), the least any allocation may hold.
func (p Profile) Lowest() (cpus, mem float64) { return p.cpus[0], p.mem[0] }

// Factor is the relative throughput at cpus and mem (GB) per GPU, interpolated bilinearly between
// the grid's measured points and exact on them. Above the grid's top the value at the top holds
// (every profile has saturated there); below its lowest point nothing was measured, which is an
// error.
func (p Profile) Factor(cpus, mem float64) (float64, error) {
	i, fi, err := bracket(p.cpus, cpus, "CPUs")
	if err != nil {
		return 0, err
	}
	j, fj, err := bracket(p.mem, mem, "GB of memory")
	if err != nil {
		return 0, err
	}
	t := p.tput
	lo := t[i][j]*(1-fj) + t[i][j+1]*fj
	hi := t[i+1][j]*(1-fj) + t[i+1][j+1]*fj
	return lo*(1-fi) + hi*fi, nil
}

// increasing reports whether axis has at least 2 positive values, each above the one before.
func increasing(axis []float64) bool {
	if len(axis) < 2 || !(axis[0] > 0) {
		return false
	}
	for i := 1; i < len(axis); i++ {
		if !(axis[i] > axis[i-1]) {
			return false
		}
	}
	return true
}

// bracket finds the grid cell [axis[i], axis[i+1]] holding x and x's fraction across it; x above
// the top is clamped to it.
func bracket(axis []float64, x float64, what string) (int, float64, error) {
	if !(x >= axis[0]) {
		return 0, 0, fmt.Errorf("%g %s per GPU is below Synergy's lowest measured %g", x, what, axis[0])
	}
	n := len(axis)
	if x >= axis[n-1] {
		return n - 2, 1, nil
	}
	i := sort.SearchFloat64s(axis, x) // first axis[i] >= x
	if axis[i] == x {
		if i == n-1 {
			return n - 2, 1, nil
		}
		return i, 0, nil
	}
	return i - 1, (x - axis[i-1]) / (axis[i] - axis[i-1]), nil
}
