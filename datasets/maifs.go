package datasets

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/digest"
)

// MAIFSSchema names the multi-agent row layout below; readers refuse any other.
const MAIFSSchema = "maifs-transitions-v1"

// MAIFSRow is one present job at one decision point of the fungible world: what rebuilds the
// round state (the job, its progress, last round's allocation GPU by GPU) and, for the agents of
// the window, the expert's candidate and place in its order. As for placement rows the
// observation is not stored: env.MAIFS.Observe rebuilds it from the state, and the stored
// candidate count proves the rebuild matches.
type MAIFSRow struct {
	Point    int32   `parquet:"point,delta"` // decision point, numbered within the split
	Time     float64 `parquet:"time"`        // the boundary's time (s)
	Agent    int32   `parquet:"agent"`       // place among the present jobs, oldest first
	JobID    int32   `parquet:"job_id"`
	JobType  string  `parquet:"job_type,dict"`
	GPUs     int32   `parquet:"gpus"`
	Steps    int64   `parquet:"steps"`
	Arrival  float64 `parquet:"arrival"`
	Done     float64 `parquet:"done_steps"`
	Attained float64 `parquet:"attained_gpu_s"`
	Waited   float64 `parquet:"waited_s"`
	Held     bool    `parquet:"held"`
	// Last round's allocation, when Held: GPU type, CPUs and GB per GPU, partner job (-1 none),
	// and its GPUs as parallel lists of server index and GPU index.
	PrevGPUType string  `parquet:"prev_gpu_type,dict"`
	PrevCPUs    float64 `parquet:"prev_cpus_per_gpu"`
	PrevMem     float64 `parquet:"prev_mem_gb_per_gpu"`
	PrevPartner int32   `parquet:"prev_partner"`
	PrevServers []int32 `parquet:"prev_servers,list"`
	PrevGPUIdx  []int32 `parquet:"prev_gpu_index,list"`
	// The expert's decision, for agents (-1 beyond the window): its candidate, its rank in the
	// expert's order, and how many candidates the agent had.
	Action   int32 `parquet:"action"`
	Rank     int32 `parquet:"rank"`
	NumCands int32 `parquet:"num_candidates"`
}

// MAIFSColumns lists the row's columns in schema order (interop checks, docs).
var MAIFSColumns = []string{"point", "time", "agent", "job_id", "job_type", "gpus", "steps", "arrival", "done_steps",
	"attained_gpu_s", "waited_s", "held", "prev_gpu_type", "prev_cpus_per_gpu", "prev_mem_gb_per_gpu", "prev_partner",
	"prev_servers", "prev_gpu_index", "action", "rank", "num_candidates"}

// MAIFSManifest describes a multi-agent dataset: what made it, the world it was made in, and a
// checksum of every shard.
type MAIFSManifest struct {
	SchemaVersion string                 `json:"schema_version"`
	Env           string                 `json:"env"`
	FeatureSpec   string                 `json:"feature_spec"`
	Cluster       string                 `json:"cluster"`
	ServerGPUs    int                    `json:"server_gpus"`
	Options       env.MAIFSOptions       `json:"env_options"`
	Source        map[string]any         `json:"source"` // the expert and workloads
	Splits        map[string]*MAIFSSplit `json:"splits"`
}

// MAIFSSplit is one split's decision points and shards.
type MAIFSSplit struct {
	Points int         `json:"points"`
	Rows   int64       `json:"rows"`
	Shards []ShardInfo `json:"shards"`
}

// maifsRows flattens a split's samples into rows.
func maifsRows(samples []env.MAIFSSample) []MAIFSRow {
	var rows []MAIFSRow
	for p, s := range samples {
		for i, st := range s.State.Present {
			r := MAIFSRow{Point: int32(p), Time: s.State.Now, Agent: int32(i), JobID: int32(st.ID), JobType: st.Type, GPUs: int32(st.GPUs),
				Steps: st.Steps, Arrival: st.Arrival, Done: st.Done, Attained: st.Attained, Waited: st.Waited, Held: st.Held,
				PrevPartner: -1, Action: -1, Rank: -1}
			if st.Held {
				a := st.Prev
				r.PrevGPUType, r.PrevCPUs, r.PrevMem, r.PrevPartner = a.GPUType, a.CPUsPerGPU, a.MemPerGPU, int32(a.Partner)
				for _, part := range a.Parts {
					for _, g := range part.GPUs {
						r.PrevServers = append(r.PrevServers, int32(part.Server))
						r.PrevGPUIdx = append(r.PrevGPUIdx, int32(g))
					}
				}
			}
			if i < s.Obs.NumAgents() {
				r.Action, r.Rank, r.NumCands = int32(s.Actions[i]), int32(s.Rank[i]), int32(len(s.Obs.Cand[i]))
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// WriteMAIFS writes the splits' samples under dir (train/, val/ shards, then manifest.json),
// all under a temporary name renamed into place; an existing dir is an error unless force.
func WriteMAIFS(dir string, m MAIFSManifest, splits map[string][]env.MAIFSSample, force bool) error {
	d, err := atomicfile.CreateDir(dir, force)
	if err != nil {
		return err
	}
	defer d.Abort()
	m.SchemaVersion, m.Env, m.FeatureSpec, m.Splits = MAIFSSchema, env.MAIFSName, env.MAIFSSpec, map[string]*MAIFSSplit{}
	for _, name := range slices.Sorted(maps.Keys(splits)) {
		w := newShardWriter[MAIFSRow](d.Tmp, name, MAIFSSchema, 1<<20, 1<<14)
		rows := maifsRows(splits[name])
		if _, err := w.write(rows); err != nil {
			return err
		}
		shards, err := w.finish()
		if err != nil {
			return err
		}
		m.Splits[name] = &MAIFSSplit{Points: len(splits[name]), Rows: int64(len(rows)), Shards: shards}
	}
	data, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.Tmp, ManifestFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return d.Commit()
}

// ReadMAIFSManifest reads and checks dir's manifest.
func ReadMAIFSManifest(dir string) (*MAIFSManifest, error) {
	path := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m MAIFSManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.SchemaVersion != MAIFSSchema || m.FeatureSpec != env.MAIFSSpec {
		return nil, fmt.Errorf("%s: schema_version %q, feature_spec %q; this build reads %s, %s", path, m.SchemaVersion, m.FeatureSpec, MAIFSSchema, env.MAIFSSpec)
	}
	return &m, nil
}

// ReadMAIFS rebuilds a split's samples through e (built over the manifest's cluster and
// options): each shard's size and sha256 are checked first, then every decision point's
// observation is rebuilt from its rows and must have the stored candidate counts.
func ReadMAIFS(dir, split string, e *env.MAIFS) ([]env.MAIFSSample, error) {
	m, err := ReadMAIFSManifest(dir)
	if err != nil {
		return nil, err
	}
	sp, ok := m.Splits[split]
	if !ok {
		return nil, fmt.Errorf("%s: no %s split (have %v)", dir, split, slices.Sorted(maps.Keys(m.Splits)))
	}
	var rows []MAIFSRow
	for _, sh := range sp.Shards {
		path := filepath.Join(dir, filepath.FromSlash(sh.Path))
		sum, size, err := digest.File(path)
		if err != nil {
			return nil, err
		}
		if size != sh.Bytes || sum != sh.SHA256 {
			return nil, fmt.Errorf("%s: %d bytes sha256 %s, the manifest says %d bytes %s", path, size, sum, sh.Bytes, sh.SHA256)
		}
		var schema string
		if err := scanShard(path, func(r *MAIFSRow) { rows = append(rows, cloneMAIFSRow(*r)) }, &schema); err != nil {
			return nil, err
		}
	}
	var out []env.MAIFSSample
	for start := 0; start < len(rows); {
		end := start
		for end < len(rows) && rows[end].Point == rows[start].Point {
			end++
		}
		s, err := maifsSample(e, rows[start:end])
		if err != nil {
			return nil, fmt.Errorf("%s: %s split, decision point %d: %w", dir, split, rows[start].Point, err)
		}
		out = append(out, s)
		start = end
	}
	if len(out) != sp.Points {
		return nil, fmt.Errorf("%s: %s split has %d decision points, the manifest says %d", dir, split, len(out), sp.Points)
	}
	return out, nil
}

// cloneMAIFSRow copies a row's lists out of the reader's reused buffers.
func cloneMAIFSRow(r MAIFSRow) MAIFSRow {
	r.PrevServers, r.PrevGPUIdx = slices.Clone(r.PrevServers), slices.Clone(r.PrevGPUIdx)
	return r
}

// maifsSample rebuilds one decision point from its rows (in agent order).
func maifsSample(e *env.MAIFS, rows []MAIFSRow) (env.MAIFSSample, error) {
	s := fungible.RoundState{Now: rows[0].Time}
	for i, r := range rows {
		if int(r.Agent) != i {
			return env.MAIFSSample{}, fmt.Errorf("row for agent %d at place %d", r.Agent, i)
		}
		st := fungible.JobStatus{Job: fungible.Job{ID: int(r.JobID), Type: r.JobType, GPUs: int(r.GPUs), Steps: r.Steps, Arrival: r.Arrival},
			Done: r.Done, Attained: r.Attained, Waited: r.Waited, Held: r.Held}
		if r.Held {
			if len(r.PrevServers) != len(r.PrevGPUIdx) || len(r.PrevServers) == 0 {
				return env.MAIFSSample{}, fmt.Errorf("job %d: prev_servers has %d entries, prev_gpu_index %d", r.JobID, len(r.PrevServers), len(r.PrevGPUIdx))
			}
			a := fungible.Allocation{Job: st.ID, JobType: st.Type, GPUType: r.PrevGPUType, CPUsPerGPU: r.PrevCPUs, MemPerGPU: r.PrevMem, Partner: int(r.PrevPartner)}
			for k, srv := range r.PrevServers {
				if n := len(a.Parts); n == 0 || a.Parts[n-1].Server != int(srv) {
					a.Parts = append(a.Parts, fungible.Part{Server: int(srv)})
				}
				a.Parts[len(a.Parts)-1].GPUs = append(a.Parts[len(a.Parts)-1].GPUs, int(r.PrevGPUIdx[k]))
			}
			if err := checkServers(e.Cluster(), a); err != nil {
				return env.MAIFSSample{}, fmt.Errorf("job %d: %w", r.JobID, err)
			}
			st.Prev = a
		}
		s.Present = append(s.Present, st)
	}
	o, err := e.Observe(fungible.NewLedger(e.Cluster()), s)
	if err != nil {
		return env.MAIFSSample{}, err
	}
	sample := env.MAIFSSample{State: s, Obs: o, Actions: make([]int, o.NumAgents()), Rank: make([]int, o.NumAgents())}
	for i := range o.NumAgents() {
		r := rows[i]
		switch {
		case int(r.NumCands) != len(o.Cand[i]):
			return sample, fmt.Errorf("job %d: %d candidates stored, the environment rebuilds %d (a different build or options)", r.JobID, r.NumCands, len(o.Cand[i]))
		case r.Action < 0 || int(r.Action) >= len(o.Cand[i]) || r.Rank < 0 || int(r.Rank) >= o.NumAgents():
			return sample, fmt.Errorf("job %d: action %d of %d candidates, rank %d of %d agents", r.JobID, r.Action, len(o.Cand[i]), r.Rank, o.NumAgents())
		}
		sample.Actions[i], sample.Rank[i] = int(r.Action), int(r.Rank)
	}
	sample.Turn, err = e.TurnMasks(o, sample.Actions, sample.Rank)
	return sample, err
}

// checkServers refuses an allocation naming a server or GPU the cluster lacks.
func checkServers(c fungible.Cluster, a fungible.Allocation) error {
	for _, p := range a.Parts {
		if p.Server < 0 || p.Server >= len(c) {
			return fmt.Errorf("prev_servers names server %d, the cluster has %d", p.Server, len(c))
		}
		for _, g := range p.GPUs {
			if g < 0 || g >= c[p.Server].GPUs {
				return fmt.Errorf("prev_gpu_index names GPU %d of server %s, which has %d", g, c[p.Server].Name, c[p.Server].GPUs)
			}
		}
	}
	return nil
}
