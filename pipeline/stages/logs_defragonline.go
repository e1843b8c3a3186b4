package stages

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/registry"
	"github.com/schedrl/schedrl/sim"
)

// The defrag-online family: an online method's invocations are its expert logs, cloned as a
// defrag dataset (datasets.env: defrag); its episodes read the defrag and defrag_online
// sections, and it is also an eval.timed.kind, whose timelines are the defrag_online section;
// configs/defrag-online.yaml's pipeline publishes it as the registry model defrag.
func init() {
	family.Register(family.Family{
		Name: online.EnvName,
		ExpertLogs: func(cfg config.Config) (pipeline.Stage, error) {
			if err := localOnly(cfg, "the logs stage of finetune.env "+cfg.Finetune.Env); err != nil {
				return nil, err
			}
			return newOnlineDemos(cfg)
		},
		Sections: func(c config.Config) any { return []any{c.Defrag, c.DefragOnline} },
		EvalSection: func(c config.Config) (any, error) {
			if err := eval.CheckDefragOnline(c.Eval, &c.DefragOnline); err != nil {
				return nil, fmt.Errorf("eval config: %w", err)
			}
			return c.DefragOnline, nil
		},
	})
	registry.RegisterPipelineConfig("defrag", "configs/defrag-online.yaml")
}

// onlineDemos is the defrag-online logs stage: defrag_online.expert defragments the timeline
// of every finetune.traces pod list x defrag_online.loads x pipeline.log_seeds on the whole
// finetune.nodes cluster, and each of its invocations becomes a migration log (online.Demos),
// the behaviour-cloning input of the defrag network.
type onlineDemos struct {
	sec    config.DefragOnlineConfig
	nodes  string
	traces []eval.TraceRef
	seeds  []uint64
	key    onlineDemosKey
}

// onlineDemosKey is what the logs depend on: the timelines, trigger and expert, the defrag
// rewards the logs' plans carry, the seeds and the content of the node and pod lists.
type onlineDemosKey struct {
	Online config.DefragOnlineConfig `json:"defrag_online"`
	Defrag config.DefragConfig       `json:"defrag"`
	Seeds  []uint64                  `json:"seeds"`
	Files  []logFile                 `json:"files"`
}

func newOnlineDemos(cfg config.Config) (*onlineDemos, error) {
	sec := cfg.DefragOnline
	if err := sec.Validate(); err != nil {
		return nil, fmt.Errorf("defrag_online.%w", err)
	}
	if err := online.ConfigOf(sec).Validate(); err != nil {
		return nil, fmt.Errorf("defrag_online.%w", err)
	}
	if _, err := online.NewPlanner(sec.Expert); err != nil {
		return nil, fmt.Errorf("defrag_online.expert: %w", err)
	}
	seeds, err := config.ParseSeeds(cfg.Pipeline.LogSeeds)
	if err != nil {
		return nil, fmt.Errorf("pipeline.log_seeds: %w", err)
	}
	held, err := config.ParseSeeds(sec.HeldOut)
	if err != nil {
		return nil, fmt.Errorf("defrag_online.held_out_seeds: %w", err)
	}
	for _, s := range seeds {
		if slices.Contains(held, s) {
			return nil, fmt.Errorf("pipeline.log_seeds: %d is a held-out timeline (defrag_online.held_out_seeds)", s)
		}
	}
	s := &onlineDemos{sec: sec, nodes: cfg.Finetune.Nodes, seeds: seeds}
	files := map[string]string{"nodes": cfg.Finetune.Nodes}
	for _, t := range cfg.Finetune.Traces {
		ref, err := eval.ParseTraceRef(t, cfg.Finetune.TracesDir)
		if err != nil {
			return nil, fmt.Errorf("finetune.traces: %w", err)
		}
		s.traces = append(s.traces, ref)
		files["trace "+ref.Name] = ref.Path
	}
	hashes, err := hashFiles("finetune", files)
	if err != nil {
		return nil, err
	}
	s.key = onlineDemosKey{Online: sec, Defrag: cfg.Defrag, Seeds: seeds, Files: hashes}
	s.key.Defrag.Placer = "" // the online world places with FGD whatever the static section says
	return s, nil
}

func (s *onlineDemos) Name() string     { return "logs" }
func (s *onlineDemos) Inputs() []string { return nil }
func (s *onlineDemos) Config() any      { return s.key }

func (s *onlineDemos) Run(ctx context.Context, env pipeline.Env) (pipeline.Result, error) {
	nodes, err := sim.LoadNodes(s.nodes)
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("finetune.nodes %q: %w", s.nodes, err)
	}
	oc := online.ConfigOf(s.sec)
	rewards := defragRewards(s.key.Defrag)
	env.Progress.Start(int64(len(s.traces)*len(s.sec.Loads)*len(s.seeds)), "timelines")
	logs := 0
	for _, ref := range s.traces {
		trace, err := sim.LoadTasks(ref.Path)
		if err != nil {
			return pipeline.Result{}, fmt.Errorf("finetune.traces %s: %w", ref.Name, err)
		}
		model, err := sim.TypicalShapes(trace, 0.95) // the typical shapes `schedrl defrag online` measures with
		if err != nil {
			return pipeline.Result{}, fmt.Errorf("finetune.traces %s: %w", ref.Name, err)
		}
		for _, load := range s.sec.Loads {
			for _, seed := range s.seeds {
				if err := ctx.Err(); err != nil {
					return pipeline.Result{}, err
				}
				tl := online.TimelineOf(s.sec, nodes, trace, model, load, seed)
				prefix := fmt.Sprintf("%s-load%s-seed%d", ref.Name, strconv.FormatFloat(load, 'g', -1, 64), seed)
				written, err := online.Demos(tl, oc, s.sec.Expert, rewards, env.OutDir, prefix)
				if err != nil {
					return pipeline.Result{}, fmt.Errorf("%s: %w", prefix, err)
				}
				logs += len(written)
				env.Log.Info("online demonstrations written", "timeline", prefix, "invocations", len(written))
				env.Progress.Add(1)
			}
		}
	}
	if logs == 0 {
		return pipeline.Result{}, fmt.Errorf("defrag_online.expert %s was never invoked on the timelines: no demonstrations to learn from", s.sec.Expert)
	}
	return pipeline.Result{Metric: &pipeline.Metric{Name: "invocations", Value: float64(logs)}}, nil
}
