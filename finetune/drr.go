package finetune

import (
	"fmt"

	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/tasks"
)

// The drr family's PPO: a placement network placing every start of timed-world timelines.
func init() { Register(online.DRREnvName, singleAgent(newDRREpisodes)) }

// drrEpisodes are DRR placement episodes (online.DRREpisode): a draw names a timeline of the
// openb timed world as defrag-online's do (the draw's trace on its seeded sub-cluster, the
// load its seed picks from defrag_online.loads, defrag_online's duration, warm-up and cap;
// defrag_online.held_out_seeds refused), and the agent places every start.
type drrEpisodes struct {
	*onlineEpisodes
}

func newDRREpisodes(cfg config.Config) (*drrEpisodes, error) {
	o, err := newOnlineEpisodes(cfg)
	if err != nil {
		return nil, err
	}
	return &drrEpisodes{o}, nil
}

func (e *drrEpisodes) spec() env.Spec { s, _ := env.SpecOf(env.PlacementName); return s }

// drrEpisode is one timeline; its outcome is the run's fragmentation rate.
type drrEpisode struct{ *online.DRREpisode }

func (e drrEpisode) outcome() episodeEnd {
	end := episodeEnd{}
	if r := e.Result(); r != nil {
		end.FragRatioPct = r.FragRatioMeanPct
	}
	return end
}

func (e *drrEpisodes) start(d Draw) (episode, error) {
	tl, err := e.timeline(d)
	if err != nil {
		return nil, err
	}
	ep, err := online.NewDRREpisode(tl, e.base.opts)
	if err != nil {
		return nil, fmt.Errorf("timeline %+v: %w", d, err)
	}
	return drrEpisode{ep}, nil
}

// drrHeld is a DRR held-out evaluation: per timeline, the time-averaged fragmentation rate
// over the measured window and the mean queueing delay of GPU tasks, and their means.
type drrHeld struct {
	FragRatioPct  []float64 `json:"frag_ratio_mean_pct"`
	GPUDelay      []float64 `json:"gpu_queue_delay_mean_s"`
	MeanFragRatio float64   `json:"mean_frag_ratio_mean_pct"`
	MeanGPUDelay  float64   `json:"mean_gpu_queue_delay_mean_s"`
}

// evaluate places greedily on every held-out timeline (finetune.eval_seeds on
// eval_cluster_size nodes, the first trace).
func (e *drrEpisodes) evaluate(pol policy, workers int) (heldOut, error) {
	seeds := e.base.evalSeeds
	slots, err := greedy(pol, e, seeds, e.base.evalSize, workers)
	if err != nil {
		return heldOut{}, err
	}
	d := &drrHeld{}
	for _, s := range slots {
		r := s.ep.(drrEpisode).Result()
		gpu := r.Delays()[tasks.ClassGPU].Mean
		d.FragRatioPct, d.GPUDelay = append(d.FragRatioPct, r.FragRatioMeanPct), append(d.GPUDelay, gpu)
		d.MeanFragRatio += r.FragRatioMeanPct / float64(len(seeds))
		d.MeanGPUDelay += gpu / float64(len(seeds))
	}
	return heldOut{Seeds: seeds, DRR: d}, nil
}

func (e *drrEpisodes) summary(res *Result) map[string]float64 {
	m := map[string]float64{"env_steps": float64(res.EnvSteps)}
	s, f := res.Start.DRR, res.Final.DRR
	if s == nil || f == nil {
		return m
	}
	m["start_frag_ratio_mean_pct"], m["final_frag_ratio_mean_pct"] = s.MeanFragRatio, f.MeanFragRatio
	m["start_gpu_queue_delay_mean_s"], m["final_gpu_queue_delay_mean_s"] = s.MeanGPUDelay, f.MeanGPUDelay
	res.Summary = family.Summary{Metric: "heldout_frag_ratio_mean_pct", Value: f.MeanFragRatio,
		Note: fmt.Sprintf("%d env steps, %.0f steps/s, held-out fragmentation rate %.2f -> %.2f%%, GPU delay %.1f -> %.1f s",
			res.EnvSteps, res.StepsPerSecond, s.MeanFragRatio, f.MeanFragRatio, s.MeanGPUDelay, f.MeanGPUDelay),
		Lines: []string{fmt.Sprintf("fine-tuned %s: held-out timelines, fragmentation rate %.2f%% -> %.2f%%, GPU queueing delay %.1f -> %.1f s, "+
			"after %d env steps (%.0f steps/s, %.0f s)", res.Dir, s.MeanFragRatio, f.MeanFragRatio, s.MeanGPUDelay, f.MeanGPUDelay,
			res.EnvSteps, res.StepsPerSecond, res.Seconds)}}
	return m
}
