package env

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/fungible"
)

// MAIFSName is the multi-agent environment's name in configs and manifests; MAIFSSpec its
// feature layout.
const (
	MAIFSName = "maifs"
	MAIFSSpec = "maifs-v1"
)

// The multi-agent observation has three kinds of entity: agents (the jobs of the window),
// servers, and each agent's candidate allocations. Times are log-scaled hours (log1p(h)/4: a
// week is about 1.3), GPU counts log2/3, CPUs and memory relative to the GPU type's fair share.
var (
	maifsAgent = []string{
		"tput_v100", "tput_p100", "tput_k80", // throughput alone at the requested count, over the row's best
		"gpus_log2", "best_cpus", "best_mem", "factor_lowest", "factor_fair", // request and Synergy profile
		"remaining", "attained", "waiting", "age", // remaining time at the best speed, GPU-hours held, since last ran, since arrival
		"held", "held_gpus", "held_v100", "held_p100", "held_k80", "held_shared", "held_cpus", // last round's allocation
		"window_rank", // place in the window, oldest first
	}
	maifsServer = []string{
		"v100", "p100", "k80", "gpus", "cpus", "mem", // type and capacity
		"prev_gpus", "prev_cpus", "prev_mem", "prev_jobs", // what last round's allocations held there
	}
	maifsCand = []string{
		"wait", "v100", "p100", "k80", "gpus_log2", "gpus_vs_request", "cpus", "mem",
		"speed", "resource_factor", "finish", "held", "partner", "partner_keeps", "current",
		"type_share", "speed_per_held",
	}
)

// MAIFSLayout names the three row layouts of the multi-agent observation.
type MAIFSLayout struct {
	Agent, Server, Cand []string
}

// MAIFSLayoutOf is this build's layout.
func MAIFSLayoutOf() MAIFSLayout {
	return MAIFSLayout{Agent: slices.Clone(maifsAgent), Server: slices.Clone(maifsServer), Cand: slices.Clone(maifsCand)}
}

// MAIFSOptions shape the environment.
type MAIFSOptions struct {
	// Window is the number of agents per decision point, present jobs waiting or running,
	// chosen by WindowOrder (the rest wait this round); 0 means 100.
	Window int `json:"window"`
	// WindowOrder chooses the Window agents when more jobs are present: "age" (or empty) the
	// oldest, "srtf" those with the least remaining time at their reference speed (ties oldest
	// first), so the short jobs SRTF would start first are never outside it. Either way the
	// agents keep age order among themselves.
	WindowOrder string `json:"window_order,omitempty"`
	// Partners is how many co-location candidates each agent gets (the agents of the window it
	// may share GPUs with, best measured pair first); 0 means 2.
	Partners int `json:"partners"`
	// FixedDemand is the ablation without fungible allocation: only the requested GPU count at
	// the type's fair share, on any type, or wait.
	FixedDemand bool `json:"fixed_demand,omitempty"`
	// MakespanWeight weighs the makespan term of the reward (MAIFSReward); 0 means 1.
	MakespanWeight float64 `json:"makespan_weight"`
}

func (o MAIFSOptions) withDefaults() MAIFSOptions {
	if o.Window == 0 {
		o.Window = 100
	}
	if o.Partners == 0 {
		o.Partners = 2
	}
	if o.MakespanWeight == 0 {
		o.MakespanWeight = 1
	}
	return o
}

// Check rejects options no run can use, naming the field.
func (o MAIFSOptions) Check() error {
	switch {
	case o.Window < 0:
		return fmt.Errorf("maifs window %d, want >= 1 (0: 100)", o.Window)
	case !slices.Contains(MAIFSWindowOrders, o.WindowOrder) && o.WindowOrder != "":
		return fmt.Errorf("maifs window_order %q, want one of %s", o.WindowOrder, strings.Join(MAIFSWindowOrders, ", "))
	case o.Partners < 0:
		return fmt.Errorf("maifs partners %d, want >= 0", o.Partners)
	case o.MakespanWeight < 0 || math.IsInf(o.MakespanWeight, 0) || math.IsNaN(o.MakespanWeight):
		return fmt.Errorf("maifs makespan_weight %v, want >= 0", o.MakespanWeight)
	}
	return nil
}

// MAIFSWindowOrders are MAIFSOptions.WindowOrder's values.
var MAIFSWindowOrders = []string{"age", "srtf"}

// MAIFSCand is one candidate of an agent: wait, a whole allocation placed by the decoder (GPU
// type, count, CPUs and GB per GPU), or sharing the GPUs of another agent of the window.
type MAIFSCand struct {
	Wait      bool
	GPUType   string // a partner candidate: the type its features assume (the pair's best); it runs on the partner's
	GPUs      int
	CPUs, Mem float64
	Partner   int     // agent index of the partner, -1 for none
	Speed     float64 // measured steps/s (a partner candidate: on the first type the pair can share)
	Feasible  bool    // it fits the ledger the round starts from

	resource     float64 // Synergy's factor at CPUs and Mem
	partnerKeeps float64 // the partner's paired over alone speed
}

// MAIFSObs is one decision point: agent, server and candidate rows, the candidates themselves
// and the jobs the agents are. Candidate 0 of every agent is wait.
type MAIFSObs struct {
	Agents  []float32 // len(Jobs) x len(maifsAgent)
	Servers []float32 // servers x len(maifsServer)
	// Cands holds each agent's candidates' rows, agent after agent (CandStart[i] is agent i's
	// first row, CandStart[len(Jobs)] the total).
	Cands     []float32
	CandStart []int
	Cand      [][]MAIFSCand
	Jobs      []fungible.JobStatus
}

// NumAgents is the number of agents.
func (o *MAIFSObs) NumAgents() int { return len(o.Jobs) }

// MAIFS builds observations over one cluster and speed model. It caches pair measurements, so
// one MAIFS serves one goroutine.
type MAIFS struct {
	c       fungible.Cluster
	m       fungible.SpeedModel
	opts    MAIFSOptions
	types   []string
	fair    map[string][2]float64
	typeGPU map[string]int // GPUs per type
	total   int
	pairs   map[pairKey]pairGain
}

// NewMAIFS is the environment over c and m.
func NewMAIFS(c fungible.Cluster, m fungible.SpeedModel, opts MAIFSOptions) (*MAIFS, error) {
	if err := opts.Check(); err != nil {
		return nil, err
	}
	e := &MAIFS{c: c, m: m, opts: opts.withDefaults(), types: c.Types(), fair: map[string][2]float64{}, typeGPU: map[string]int{}, pairs: map[pairKey]pairGain{}}
	for _, t := range e.types {
		fc, fm := c.FairShare(t)
		e.fair[t] = [2]float64{fc, fm}
	}
	for _, s := range c {
		e.typeGPU[s.GPUType] += s.GPUs
		e.total += s.GPUs
	}
	return e, nil
}

// Options are the environment's options with defaults filled in.
func (e *MAIFS) Options() MAIFSOptions { return e.opts }

// Cluster is the environment's cluster.
func (e *MAIFS) Cluster() fungible.Cluster { return e.c }

// Model is the environment's speed model.
func (e *MAIFS) Model() fungible.SpeedModel { return e.m }

func hours(s float64) float32 { return float32(math.Log1p(max(s, 0)/3600) / 4) }

func log2n(n int) float32 { return float32(math.Log2(float64(max(n, 1))) / 3) }

// Observe encodes a round boundary: the window's agents, the servers with what last round held
// there, and every agent's candidates with their masks on l (the ledger the round starts from).
func (e *MAIFS) Observe(l *fungible.Ledger, s fungible.RoundState) (*MAIFSObs, error) {
	agents := e.window(s.Present)
	n := len(agents)
	o := &MAIFSObs{Jobs: agents, Cand: make([][]MAIFSCand, n), CandStart: make([]int, n+1)}
	o.Agents = make([]float32, 0, n*len(maifsAgent))
	for i, st := range o.Jobs {
		row, err := e.agentRow(st, i, n, s.Now)
		if err != nil {
			return nil, err
		}
		o.Agents = append(o.Agents, row...)
	}
	o.Servers = e.serverRows(s)
	pl := fungible.NewPlacer(l, e.m)
	for i, st := range o.Jobs {
		cands, err := e.candidates(pl, o.Jobs, i)
		if err != nil {
			return nil, err
		}
		o.Cand[i] = cands
		ref := e.refSpeed(st.Job)
		for _, c := range cands {
			o.Cands = append(o.Cands, e.candRow(st, c, ref)...)
		}
		o.CandStart[i+1] = o.CandStart[i] + len(cands)
	}
	return o, nil
}

// window is the decision point's agents (WindowOrder), in age order.
func (e *MAIFS) window(present []fungible.JobStatus) []fungible.JobStatus {
	if len(present) <= e.opts.Window {
		return present
	}
	if e.opts.WindowOrder != "srtf" {
		return present[:e.opts.Window]
	}
	idx := make([]int, len(present))
	left := make([]float64, len(present))
	for i, st := range present {
		idx[i] = i
		if ref := e.refSpeed(st.Job); ref > 0 {
			left[i] = st.Remaining() / ref
		}
	}
	// Stable: ties stay oldest first; then the chosen back in age order.
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(left[a], left[b]) })
	idx = idx[:e.opts.Window]
	slices.Sort(idx)
	out := make([]fungible.JobStatus, len(idx))
	for k, i := range idx {
		out[k] = present[i]
	}
	return out
}

// refSpeed is a job's best speed alone at its requested count: the fastest type at the fair share.
func (e *MAIFS) refSpeed(j fungible.Job) float64 {
	best := 0.0
	for _, t := range e.types {
		if v, ok := e.m.Tput.Alone(t, j.Type, j.GPUs); ok {
			best = max(best, v)
		}
	}
	return best
}

func (e *MAIFS) agentRow(st fungible.JobStatus, i, n int, now float64) ([]float32, error) {
	prof, err := e.m.Sens.Profile(st.Type)
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", st.ID, err)
	}
	row := make([]float32, len(maifsAgent))
	ref := e.refSpeed(st.Job)
	if ref <= 0 {
		return nil, fmt.Errorf("job %d: no throughput for %q on %d GPUs of any type the cluster has", st.ID, st.Type, st.GPUs)
	}
	for k, t := range fungible.GPUTypes {
		if v, ok := e.m.Tput.Alone(t, st.Type, st.GPUs); ok && v > 0 && slices.Contains(e.types, t) {
			row[k] = float32(v / ref)
		}
	}
	lc, lm := prof.Lowest()
	low, _ := prof.Factor(lc, lm)
	fc, fm := fungible.CPUsPerGPU, fungible.MemGBPerGPU
	fair, _ := prof.Factor(min(prof.BestCPUs, fc), min(prof.BestMem, fm))
	row[3], row[4], row[5], row[6], row[7] = log2n(st.GPUs), float32(prof.BestCPUs/(4*fc)), float32(prof.BestMem/(4*fm)), float32(low), float32(fair)
	row[8] = hours(st.Remaining() / ref)
	row[9] = hours(st.Attained)
	row[10] = hours(st.Waited)
	row[11] = hours(now - st.Arrival)
	if st.Held {
		a := st.Prev
		row[12], row[13] = 1, log2n(a.GPUCount())
		row[14+slices.Index(fungible.GPUTypes, a.GPUType)] = 1
		if a.Partner != fungible.NoPartner {
			row[17] = 1
		}
		f := e.fair[a.GPUType]
		row[18] = float32(a.CPUsPerGPU / f[0] / 4)
	}
	row[19] = float32(i) / float32(max(n, 1))
	return row, nil
}

func (e *MAIFS) serverRows(s fungible.RoundState) []float32 {
	rows := make([]float32, len(e.c)*len(maifsServer))
	for i, sv := range e.c {
		r := rows[i*len(maifsServer) : (i+1)*len(maifsServer)]
		r[slices.Index(fungible.GPUTypes, sv.GPUType)] = 1
		r[3], r[4], r[5] = float32(sv.GPUs)/fungible.ServerGPUs, float32(sv.CPUs/(fungible.CPUsPerGPU*fungible.ServerGPUs)), float32(sv.MemGB/(fungible.MemGBPerGPU*fungible.ServerGPUs))
	}
	for _, st := range s.Present {
		if !st.Held {
			continue
		}
		for _, p := range st.Prev.Parts {
			sv := e.c[p.Server]
			r := rows[p.Server*len(maifsServer) : (p.Server+1)*len(maifsServer)]
			g := float32(len(p.GPUs))
			r[6] += g / float32(sv.GPUs)
			r[7] += g * float32(st.Prev.CPUsPerGPU/sv.CPUs)
			r[8] += g * float32(st.Prev.MemPerGPU/sv.MemGB)
			r[9] += 1.0 / fungible.ServerGPUs
		}
	}
	return rows
}
