package fungible

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/digest"
)

// The fungible world's decision log (docs/decision-log.md, "Logs of whole allocations"): JSON
// lines, a header with what a reader needs to rebuild the world (cluster, servers, every job,
// the workload spec and seed, the data files' digests), one record per round with the order
// policy's queue and every allocation held in the round, and an end record with the run's JCTs.
// Every job is released at each boundary (the world preempts and re-places every round), so a
// round record is the whole cluster's state for that round.
const (
	LogSchema  = "schedrl.fungible-log"
	LogVersion = 1
)

// LogHeader is a log's first line.
type LogHeader struct {
	Schema     string      `json:"schema"`
	Version    int         `json:"version"`
	Type       string      `json:"type"` // "header"
	Cluster    string      `json:"cluster"`
	ServerGPUs int         `json:"server_gpus"`
	Servers    []LogServer `json:"servers"`
	RoundS     float64     `json:"round_s"`
	// Rule and Order are the deciding policy: a rule and its job order, or a round policy by
	// name (an LP, a checkpoint) with the order that sorted its queue ("" when none did).
	Rule  string `json:"rule"`
	Order string `json:"order"`
	// Workload is the generated workload's spec (jobs=N,lam=S[,multigpu]) or the trace file;
	// Seed drew it.
	Workload string    `json:"workload"`
	Seed     uint64    `json:"seed"`
	Jobs     []LogJob  `json:"jobs"` // in arrival order
	Files    []LogFile `json:"files"`
}

// LogServer is one server of the cluster, in the order allocations name them.
type LogServer struct {
	Name    string  `json:"name"`
	GPUType string  `json:"gpu_type"`
	GPUs    int     `json:"gpus"`
	CPUs    float64 `json:"cpus"`
	MemGB   float64 `json:"mem_gb"`
}

// LogJob is one job of the workload.
type LogJob struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	GPUs    int     `json:"gpus"`
	Steps   int64   `json:"steps"`
	Arrival float64 `json:"arrival"`
}

// LogFile names a data file the run read (throughputs, profiles, mapping) and its sha256.
type LogFile struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// LogRound is one round's decision: the queue the order policy handed the rule (job IDs, first
// first) and the allocation of every job that runs in the round.
type LogRound struct {
	Type   string     `json:"type"` // "round"
	Round  int        `json:"round"`
	Time   float64    `json:"time"`
	Queue  []int      `json:"queue"`
	Allocs []LogAlloc `json:"allocations"`
	line   int
}

// LogAlloc is one job's allocation: GPU type, the GPUs on each server, CPUs and GB per GPU,
// and the job sharing those GPUs (-1: none).
type LogAlloc struct {
	Job        int       `json:"job"`
	GPUType    string    `json:"gpu_type"`
	Parts      []LogPart `json:"parts"`
	GPUs       int       `json:"gpus"`
	CPUsPerGPU float64   `json:"cpus_per_gpu"`
	MemPerGPU  float64   `json:"mem_gb_per_gpu"`
	Partner    int       `json:"partner"`
}

// LogPart is an allocation's GPU indices on one server (an index into the header's servers).
type LogPart struct {
	Server int   `json:"server"`
	GPUs   []int `json:"gpus"`
}

// LogEnd is a log's last line: the run's outcome, which a replay must reproduce.
type LogEnd struct {
	Type     string    `json:"type"` // "end"
	Rounds   int       `json:"rounds"`
	AvgJCT   float64   `json:"avg_jct_s"`
	Makespan float64   `json:"makespan_s"`
	JCT      []float64 `json:"jct_s"` // per job, in the header's order
}

// Log is a whole decision log.
type Log struct {
	Header LogHeader
	Rounds []LogRound
	End    LogEnd
	types  map[int]string // job ID -> job type
}

// RoundLog records every round's decision of a run; Record installs it.
type RoundLog struct {
	inner  RoundPolicy
	rule   Rule
	Rounds []LogRound
}

// Record makes cfg's decision (its Policy, else its Rule on the ordered queue) keep every
// round's queue and allocations in the returned RoundLog; run cfg afterwards.
func Record(cfg *RunConfig) *RoundLog {
	r := &RoundLog{inner: cfg.Policy, rule: cfg.Rule}
	if cfg.Rule == nil {
		cfg.Rule = Fixed // the up-front check Run applies to a policy
	}
	cfg.Policy = r
	return r
}

// Plan implements RoundPolicy.
func (r *RoundLog) Plan(l *Ledger, m SpeedModel, s RoundState) (Plan, error) {
	var plan Plan
	var err error
	if r.inner != nil {
		plan, err = r.inner.Plan(l, m, s)
	} else {
		plan, err = r.rule(l, m, s.Queue)
	}
	if err != nil {
		return plan, err
	}
	round := LogRound{Type: "round", Round: len(r.Rounds), Time: s.Now, Queue: make([]int, len(s.Queue)), Allocs: []LogAlloc{}}
	for i, j := range s.Queue {
		round.Queue[i] = j.ID
	}
	for _, id := range plan.Ledger.Jobs() {
		a, _ := plan.Ledger.Get(id)
		la := LogAlloc{Job: a.Job, GPUType: a.GPUType, GPUs: a.GPUCount(), CPUsPerGPU: a.CPUsPerGPU, MemPerGPU: a.MemPerGPU, Partner: a.Partner}
		for _, p := range a.Parts {
			la.Parts = append(la.Parts, LogPart{Server: p.Server, GPUs: slices.Clone(p.GPUs)})
		}
		round.Allocs = append(round.Allocs, la)
	}
	slices.SortFunc(round.Allocs, func(a, b LogAlloc) int { return a.Job - b.Job })
	r.Rounds = append(r.Rounds, round)
	return plan, nil
}

// LogServers lists c's servers for a header.
func LogServers(c Cluster) []LogServer {
	out := make([]LogServer, len(c))
	for i, s := range c {
		out[i] = LogServer{Name: s.Name, GPUType: s.GPUType, GPUs: s.GPUs, CPUs: s.CPUs, MemGB: s.MemGB}
	}
	return out
}

// LogJobs lists a workload for a header.
func LogJobs(work []Job) []LogJob {
	out := make([]LogJob, len(work))
	for i, j := range work {
		out[i] = LogJob{ID: j.ID, Type: j.Type, GPUs: j.GPUs, Steps: j.Steps, Arrival: j.Arrival}
	}
	return out
}

// WriteLog writes the header, the recorded rounds and the run's outcome as JSON lines.
func WriteLog(w io.Writer, h LogHeader, rounds []LogRound, res Result) error {
	h.Schema, h.Version, h.Type = LogSchema, LogVersion, "header"
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(h); err != nil {
		return err
	}
	for _, r := range rounds {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	end := LogEnd{Type: "end", Rounds: res.Rounds, AvgJCT: res.AvgJCT, Makespan: res.Makespan, JCT: res.JCT}
	if err := enc.Encode(end); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteLogFile writes a run's log to path under a temporary name renamed into place (a failure
// leaves nothing), with files (name to path: the tables the run read) and their sha256 in the
// header.
func WriteLogFile(path string, h LogHeader, files map[string]string, rounds []LogRound, res Result) error {
	for _, name := range slices.Sorted(maps.Keys(files)) {
		sum, _, err := digest.File(files[name])
		if err != nil {
			return err
		}
		h.Files = append(h.Files, LogFile{Name: name, Path: files[name], SHA256: sum})
	}
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := WriteLog(f, h, rounds, res); err != nil {
		return err
	}
	return f.Commit()
}

// ReadLog reads and checks a log's structure: the header's schema, servers and jobs (arrival
// order, IDs once), rounds numbered from 0 in time order naming only jobs that have arrived,
// each job once per round, and the end record last with one JCT per job. Errors name the line
// and the field. Capacity is Check's.
func ReadLog(r io.Reader) (*Log, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	lg := &Log{}
	line := 0
	next := func(v any) (bool, error) {
		if !sc.Scan() {
			return false, sc.Err()
		}
		line++
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return true, fmt.Errorf("line %d: %w", line, err)
		}
		return true, nil
	}
	ok, err := next(&lg.Header)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errors.New("line 1: empty log, want a header")
	}
	if err := lg.Header.check(); err != nil {
		return nil, fmt.Errorf("line 1: %w", err)
	}
	index := map[int]int{}
	lg.types = map[int]string{}
	for i, j := range lg.Header.Jobs {
		index[j.ID] = i
		lg.types[j.ID] = j.Type
	}
	ended := false
	for {
		var raw json.RawMessage
		ok, err := next(&raw)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if ended {
			return nil, fmt.Errorf("line %d: a record after the end record", line)
		}
		var kind struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &kind); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		switch kind.Type {
		case "round":
			var rd LogRound
			if err := dec.Decode(&rd); err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			rd.line = line
			if err := lg.checkRound(rd, index); err != nil {
				return nil, fmt.Errorf("line %d: round %d at %g s: %w", line, rd.Round, rd.Time, err)
			}
			lg.Rounds = append(lg.Rounds, rd)
		case "end":
			if err := dec.Decode(&lg.End); err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			if len(lg.End.JCT) != len(lg.Header.Jobs) || lg.End.Rounds != len(lg.Rounds) {
				return nil, fmt.Errorf("line %d: end: %d JCTs and %d rounds, the log has %d jobs and %d rounds", line,
					len(lg.End.JCT), lg.End.Rounds, len(lg.Header.Jobs), len(lg.Rounds))
			}
			ended = true
		default:
			return nil, fmt.Errorf("line %d: type %q, want round or end", line, kind.Type)
		}
	}
	if !ended {
		return nil, fmt.Errorf("line %d: the log ends without its end record (a run cut short)", line)
	}
	return lg, nil
}

func (h LogHeader) check() error {
	switch {
	case h.Schema != LogSchema || h.Version != LogVersion || h.Type != "header":
		return fmt.Errorf("schema %q version %d type %q, want %s version %d header", h.Schema, h.Version, h.Type, LogSchema, LogVersion)
	case len(h.Servers) == 0:
		return errors.New("servers: none")
	case !(h.RoundS > 0) || math.IsInf(h.RoundS, 0):
		return fmt.Errorf("round_s: %v, want > 0", h.RoundS)
	case len(h.Jobs) == 0:
		return errors.New("jobs: none")
	}
	for i, s := range h.Servers {
		if !isGPUType(s.GPUType) || s.GPUs < 1 || !(s.CPUs > 0) || !(s.MemGB > 0) {
			return fmt.Errorf("servers[%d]: %+v, want a GPU type of %v, GPUs >= 1, CPUs and memory > 0", i, s, GPUTypes)
		}
	}
	seen := map[int]bool{}
	for i, j := range h.Jobs {
		switch {
		case seen[j.ID]:
			return fmt.Errorf("jobs[%d]: id %d repeated", i, j.ID)
		case j.GPUs < 1 || j.Steps < 1 || j.Type == "":
			return fmt.Errorf("jobs[%d]: %+v, want a type, GPUs >= 1 and steps >= 1", i, j)
		case i > 0 && j.Arrival < h.Jobs[i-1].Arrival:
			return fmt.Errorf("jobs[%d]: arrival %g s before the job before it (%g s)", i, j.Arrival, h.Jobs[i-1].Arrival)
		}
		seen[j.ID] = true
	}
	return nil
}

func (lg *Log) checkRound(rd LogRound, index map[int]int) error {
	switch {
	case rd.Round != len(lg.Rounds):
		return fmt.Errorf("round: %d, want %d (rounds count from 0, one per line)", rd.Round, len(lg.Rounds))
	case len(lg.Rounds) > 0 && rd.Time <= lg.Rounds[len(lg.Rounds)-1].Time:
		return fmt.Errorf("time: %g s is not after the round before's %g s", rd.Time, lg.Rounds[len(lg.Rounds)-1].Time)
	}
	known := func(field string, id int) error {
		i, ok := index[id]
		switch {
		case !ok:
			return fmt.Errorf("%s: job %d is not in the header", field, id)
		case lg.Header.Jobs[i].Arrival > rd.Time:
			return fmt.Errorf("%s: job %d arrives at %g s, after the round starts", field, id, lg.Header.Jobs[i].Arrival)
		}
		return nil
	}
	for _, id := range rd.Queue {
		if err := known("queue", id); err != nil {
			return err
		}
	}
	held := map[int]bool{}
	for k, a := range rd.Allocs {
		field := fmt.Sprintf("allocations[%d]", k)
		if err := known(field, a.Job); err != nil {
			return err
		}
		if held[a.Job] {
			return fmt.Errorf("%s: job %d holds two allocations", field, a.Job)
		}
		held[a.Job] = true
		n := 0
		for _, p := range a.Parts {
			if p.Server < 0 || p.Server >= len(lg.Header.Servers) {
				return fmt.Errorf("%s: server %d, the header has %d", field, p.Server, len(lg.Header.Servers))
			}
			n += len(p.GPUs)
		}
		if n != a.GPUs || n == 0 {
			return fmt.Errorf("%s: gpus %d, its parts name %d GPUs", field, a.GPUs, n)
		}
	}
	return nil
}

// Cluster is the header's servers.
func (lg *Log) Cluster() Cluster {
	c := make(Cluster, len(lg.Header.Servers))
	for i, s := range lg.Header.Servers {
		c[i] = Server{Name: s.Name, GPUType: s.GPUType, GPUs: s.GPUs, CPUs: s.CPUs, MemGB: s.MemGB}
	}
	return c
}

// Work is the header's jobs.
func (lg *Log) Work() []Job {
	out := make([]Job, len(lg.Header.Jobs))
	for i, j := range lg.Header.Jobs {
		out[i] = Job{ID: j.ID, Type: j.Type, GPUs: j.GPUs, Steps: j.Steps, Arrival: j.Arrival}
	}
	return out
}

// Check applies every round's allocations to an empty ledger of the header's cluster: no
// server is ever over capacity (GPUs, CPUs, memory), and a partner shares exactly its partner's
// GPUs. An error names the line, the round, the job and the server.
func (lg *Log) Check() error {
	c := lg.Cluster()
	for _, rd := range lg.Rounds {
		if _, err := lg.apply(NewLedger(c), rd); err != nil {
			return err
		}
	}
	return nil
}

// apply starts the round's allocations on l (a pair's first job alone, the second as its
// partner, as the ledger takes them) and returns the changes.
func (lg *Log) apply(l *Ledger, rd LogRound) ([]Change, error) {
	var changes []Change
	for _, la := range rd.Allocs {
		a := Allocation{Job: la.Job, JobType: lg.types[la.Job], GPUType: la.GPUType, CPUsPerGPU: la.CPUsPerGPU, MemPerGPU: la.MemPerGPU, Partner: la.Partner}
		for _, p := range la.Parts {
			a.Parts = append(a.Parts, Part{Server: p.Server, GPUs: slices.Clone(p.GPUs)})
		}
		if _, held := l.Get(a.Partner); !held {
			a.Partner = NoPartner // its partner starts after it, naming it
		}
		if err := l.Apply(a); err != nil {
			return nil, fmt.Errorf("line %d: round %d at %g s: job %d: %w", rd.line, rd.Round, rd.Time, la.Job, err)
		}
		changes = append(changes, Change{Op: Start, Alloc: a})
	}
	return changes, nil
}

// ReplayRule is a rule that hands out the log's rounds in turn: as the rule of a round policy
// (RunConfig.Policy, as env.MAIFSRecorder runs its expert) with the log's cluster, work and
// order (RunConfig.Order), it makes the logged run again, so the policy sees every logged
// decision point with the state the run had. Not RunConfig.Rule: Run calls that before the first
// round to check the work. It refuses a round whose queue differs from the log's (the replay
// left the logged run).
func (lg *Log) ReplayRule() Rule {
	next := 0
	return func(l *Ledger, _ SpeedModel, queue []Job) (Plan, error) {
		if next >= len(lg.Rounds) {
			return Plan{}, fmt.Errorf("replay: the run goes on past the log's %d rounds", len(lg.Rounds))
		}
		rd := lg.Rounds[next]
		next++
		ids := make([]int, len(queue))
		for i, j := range queue {
			ids[i] = j.ID
		}
		if !slices.Equal(ids, rd.Queue) {
			return Plan{}, fmt.Errorf("line %d: round %d: the replay's queue %v is not the logged %v", rd.line, rd.Round, ids, rd.Queue)
		}
		out := l.Clone()
		changes, err := lg.apply(out, rd)
		return Plan{Changes: changes, Ledger: out}, err
	}
}

// Replayed checks a replay's outcome against the end record: the same rounds, and every job's
// JCT to the bit.
func (lg *Log) Replayed(res Result) error {
	if res.Rounds != lg.End.Rounds || !slices.Equal(res.JCT, lg.End.JCT) {
		return fmt.Errorf("replay: %d rounds, avg JCT %g s; the log's end record says %d rounds, %g s", res.Rounds, res.AvgJCT, lg.End.Rounds, lg.End.AvgJCT)
	}
	return nil
}
