package finetune

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/schedrl/schedrl/internal/atomicfile"
)

// RecordFile is the run record in the run directory: one JSON object per update.
const RecordFile = "metrics.jsonl"

// record is one update's line of the run record. Episode metrics are absent when no episode
// ended during the update; held_out only on updates with a held-out evaluation.
type record struct {
	Update             int      `json:"update"`
	EnvSteps           int64    `json:"env_steps"`
	LR                 float64  `json:"lr"`
	KLCoef             float64  `json:"kl_coef"`
	Episodes           int      `json:"episodes"`
	EpisodicReturn     *float64 `json:"episodic_return,omitempty"`
	EpisodeAllocPct    *float64 `json:"episode_alloc_gpu_pct,omitempty"`
	KLRef              float64  `json:"kl_pretrained"`
	ApproxKL           float64  `json:"approx_kl"`
	ClipFrac           float64  `json:"clip_frac"`
	Entropy            float64  `json:"entropy"`
	ExplainedVar       *float64 `json:"explained_variance,omitempty"`
	PolicyLoss         float64  `json:"policy_loss"`
	ValueLoss          float64  `json:"value_loss"`
	GradNorm           float64  `json:"grad_norm"`
	Epochs             int      `json:"epochs"`
	StepsPerSec        float64  `json:"env_steps_per_s"`
	RolloutStepsPerSec float64  `json:"rollout_env_steps_per_s"`
	HeldOut            *float64 `json:"held_out_alloc_gpu_pct,omitempty"`

	// Defrag episodes: the state the plan left, averaged over the episodes that ended.
	EpisodeFragRatio   *float64 `json:"episode_frag_ratio_pct,omitempty"`
	EpisodePendingGPUs *float64 `json:"episode_pending_gpus_placed,omitempty"`
	EpisodeMigrations  *float64 `json:"episode_migrations,omitempty"`
	// Defrag held-out plans (greedy decoding on the eval seeds' states): means over seeds.
	HeldOutFragBefore  *float64 `json:"held_out_frag_ratio_pct_before,omitempty"`
	HeldOutFragAfter   *float64 `json:"held_out_frag_ratio_pct,omitempty"`
	HeldOutPending     *float64 `json:"held_out_pending_placed,omitempty"`
	HeldOutPendingGPUs *float64 `json:"held_out_pending_gpus_placed,omitempty"`
	HeldOutMigrations  *float64 `json:"held_out_migrations,omitempty"`
	HeldOutReward      *float64 `json:"held_out_reward,omitempty"`
	// Defrag-online held-out timelines: the whole-GPU mean queueing delay (seconds).
	HeldOutWholeGPUDelay *float64 `json:"held_out_whole_gpu_queue_delay_mean_s,omitempty"`
	// DRR held-out timelines: the time-averaged fragmentation rate (%) and the GPU tasks' mean
	// queueing delay (seconds).
	HeldOutFragRatioMean *float64 `json:"held_out_frag_ratio_mean_pct,omitempty"`
	HeldOutGPUDelay      *float64 `json:"held_out_gpu_queue_delay_mean_s,omitempty"`

	// Maifs episodes and held-out checks (greedy decoding on maifs.generate x val_seeds): the
	// mean average JCT and makespan in hours, and the held-out per-job cost.
	EpisodeAvgJCT    *float64 `json:"episode_avg_jct_h,omitempty"`
	EpisodeMakespan  *float64 `json:"episode_makespan_h,omitempty"`
	HeldOutAvgJCT    *float64 `json:"held_out_avg_jct_h,omitempty"`
	HeldOutMakespan  *float64 `json:"held_out_makespan_h,omitempty"`
	HeldOutMAIFSCost *float64 `json:"held_out_cost_h,omitempty"`
	// Maifs rollouts: deciding agents (more than one open candidate) per decision point, and
	// the share of them that sampled another candidate than their most probable one.
	DecidingAgents *float64 `json:"deciding_agents,omitempty"`
	OffGreedy      *float64 `json:"off_greedy_share,omitempty"`
}

func (r *record) setEpisodes(ended []episodeEnd) {
	r.Episodes = len(ended)
	if len(ended) == 0 {
		return
	}
	var ret, alloc, frag, pending, migrations, jct, makespan float64
	for _, e := range ended {
		jct += e.AvgJCTHours
		makespan += e.MakespanHours
		ret += e.Return
		alloc += e.AllocPct
		frag += e.FragRatioPct
		pending += e.PendingGPUs
		migrations += float64(e.Migrations)
	}
	n := float64(len(ended))
	ret, alloc = ret/n, alloc/n
	r.EpisodicReturn = &ret
	if ended[0].maifs {
		jct, makespan = jct/n, makespan/n
		r.EpisodeAvgJCT, r.EpisodeMakespan = &jct, &makespan
		return
	}
	if !ended[0].defrag {
		r.EpisodeAllocPct = &alloc
		return
	}
	frag, pending, migrations = frag/n, pending/n, migrations/n
	r.EpisodeFragRatio, r.EpisodePendingGPUs, r.EpisodeMigrations = &frag, &pending, &migrations
}

// setHeldOut adds a held-out evaluation's means.
func (r *record) setHeldOut(h heldOut) {
	if m := h.MAIFS; m != nil {
		r.HeldOutAvgJCT, r.HeldOutMakespan, r.HeldOutMAIFSCost = &m.AvgJCT, &m.Makespan, &m.Cost
		return
	}
	if d := h.DRR; d != nil {
		r.HeldOutFragRatioMean, r.HeldOutGPUDelay = &d.MeanFragRatio, &d.MeanGPUDelay
		return
	}
	if h.Defrag == nil {
		r.HeldOut = &h.Mean
		return
	}
	m := h.Defrag.Mean
	r.HeldOutFragBefore, r.HeldOutFragAfter, r.HeldOutPending = &m.FragRatioBefore, &m.FragRatioAfter, &m.PendingPlaced
	r.HeldOutPendingGPUs, r.HeldOutMigrations, r.HeldOutReward = &m.PendingGPUs, &m.Migrations, &m.Reward
	if m.Online {
		r.HeldOutWholeGPUDelay = &m.WholeGPUDelay
	}
}

// fields are the means by their record names (held_out_ dropped).
func (m defragMeans) fields() map[string]float64 {
	f := map[string]float64{"frag_ratio_pct_before": m.FragRatioBefore, "frag_ratio_pct": m.FragRatioAfter,
		"pending_placed": m.PendingPlaced, "pending_gpus_placed": m.PendingGPUs, "migrations": m.Migrations, "reward": m.Reward}
	if m.Online {
		f["whole_gpu_queue_delay_mean_s"] = m.WholeGPUDelay
	}
	return f
}

// logArgs are a held-out evaluation's means for the log.
func (h heldOut) logArgs() []any {
	if h.Defrag == nil {
		return []any{"mean_alloc_gpu_pct", h.Mean}
	}
	m := h.Defrag.Mean
	return []any{"frag_ratio_pct_before", m.FragRatioBefore, "frag_ratio_pct_after", m.FragRatioAfter,
		"pending_placed", m.PendingPlaced, "pending_gpus_placed", m.PendingGPUs, "migrations", m.Migrations, "reward", m.Reward,
		"whole_gpu_queue_delay_mean_s", m.WholeGPUDelay}
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func (r record) logArgs() []any {
	args := []any{"update", r.Update, "env_steps", r.EnvSteps, "lr", r.LR, "kl_coef", r.KLCoef,
		"kl_pretrained", r.KLRef, "clip_frac", r.ClipFrac, "entropy", r.Entropy, "steps_per_s", math.Round(r.StepsPerSec)}
	if r.EpisodeAllocPct != nil {
		args = append(args, "episodes", r.Episodes, "episodic_return", *r.EpisodicReturn, "episode_alloc_gpu_pct", *r.EpisodeAllocPct)
	}
	if r.EpisodeFragRatio != nil {
		args = append(args, "episodes", r.Episodes, "episodic_return", *r.EpisodicReturn, "episode_frag_ratio_pct", *r.EpisodeFragRatio,
			"episode_pending_gpus_placed", *r.EpisodePendingGPUs, "episode_migrations", *r.EpisodeMigrations)
	}
	if r.EpisodeAvgJCT != nil {
		args = append(args, "episodes", r.Episodes, "episodic_return", *r.EpisodicReturn, "episode_avg_jct_h", *r.EpisodeAvgJCT, "episode_makespan_h", *r.EpisodeMakespan)
	}
	if r.ExplainedVar != nil {
		args = append(args, "explained_variance", *r.ExplainedVar)
	}
	if r.HeldOutAvgJCT != nil {
		args = append(args, "held_out_avg_jct_h", *r.HeldOutAvgJCT, "held_out_makespan_h", *r.HeldOutMakespan, "held_out_cost_h", *r.HeldOutMAIFSCost)
	}
	if r.HeldOut != nil {
		args = append(args, "held_out_alloc_gpu_pct", *r.HeldOut)
	}
	if r.HeldOutFragAfter != nil {
		args = append(args, "held_out_frag_ratio_pct", *r.HeldOutFragAfter, "held_out_pending_placed", *r.HeldOutPending,
			"held_out_pending_gpus_placed", *r.HeldOutPendingGPUs, "held_out_migrations", *r.HeldOutMigrations, "held_out_reward", *r.HeldOutReward)
	}
	if r.HeldOutWholeGPUDelay != nil {
		args = append(args, "held_out_whole_gpu_queue_delay_mean_s", *r.HeldOutWholeGPUDelay)
	}
	if r.HeldOutFragRatioMean != nil {
		args = append(args, "held_out_frag_ratio_mean_pct", *r.HeldOutFragRatioMean, "held_out_gpu_queue_delay_mean_s", *r.HeldOutGPUDelay)
	}
	return args
}

// recorder appends run-record lines; each line is synced, so a kill loses at most the line
// being written, and a resume cuts the record back to the checkpoint it continues from.
type recorder struct {
	path string
	f    *os.File
}

// openRecord opens the run record for appending after keeping only the lines of updates up
// to keep (all of them are newer than the checkpoint when a run was killed mid-way).
func openRecord(out string, keep int) (*recorder, error) {
	path := filepath.Join(out, RecordFile)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var kept bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for n := 1; sc.Scan(); n++ {
		var r struct {
			Update int `json:"update"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			break // the torn last line of a killed run
		}
		if r.Update > keep {
			break
		}
		kept.Write(sc.Bytes())
		kept.WriteByte('\n')
	}
	if err := atomicfile.WriteFile(path, kept.Bytes(), 0o644); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &recorder{path: path, f: f}, nil
}

func (rc *recorder) write(r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("run record: %w", err)
	}
	if _, err := rc.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("run record %s: %w", rc.path, err)
	}
	return rc.f.Sync()
}

func (rc *recorder) close() {
	if rc != nil && rc.f != nil {
		rc.f.Close()
	}
}

// readRecord loads a run record.
func readRecord(path string) ([]record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []record
	for n, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r record
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}
