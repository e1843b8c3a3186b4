package stages

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
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
		Name:       online.EnvName,
		ExpertLogs: func(cfg config.Config) (pipeline.Stage, error) { return newOnlineDemos(cfg) },
		Sections:   func(c config.Config) any { return []any{c.Defrag, c.DefragOnline} },
		EvalSection: func(c config.Config) (any, error) {
			if err := eval.CheckDefragOnline(c.Eval, &c.DefragOnline); err != nil {
				return nil, fmt.Errorf("eval config: %w", err)
			}
			return c.DefragOnline, nil
		},
	})
	registry.RegisterPipelineConfig("defrag", "configs/defrag-online.yaml")
}

// onlineDemos is the defrag-online expert: defrag_online.expert defragments the timeline of
// every finetune.traces pod list x defrag_online.loads x pipeline.log_seeds (a unit) on the
// whole finetune.nodes cluster, and each of its invocations becomes a migration log
// (online.Demos), the behaviour-cloning input of the defrag network.
type onlineDemos struct {
	sec    config.DefragOnlineConfig
	nodes  string
	traces []eval.TraceRef
	seeds  []uint64
	k      onlineDemosKey
	args   []string
	loaded *onlineInputs // read at the first make
}

// onlineDemosKey is what the logs depend on: the timelines, trigger and expert, the defrag
// rewards the logs' plans carry, the seeds and the content of the node and pod lists.
type onlineDemosKey struct {
	Online config.DefragOnlineConfig `json:"defrag_online"`
	Defrag config.DefragConfig       `json:"defrag"`
	Seeds  []uint64                  `json:"seeds"`
	Files  []logFile                 `json:"files"`
}

// onlineInputs are the node list and each trace with its typical shapes.
type onlineInputs struct {
	nodes  []sim.Node
	traces [][]sim.Task
	models []*sim.FragModel
}

func newOnlineDemos(cfg config.Config) (*shardedLogs, error) {
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
	s.k = onlineDemosKey{Online: sec, Defrag: cfg.Defrag, Seeds: seeds, Files: hashes}
	s.k.Defrag.Placer = "" // the online world places with FGD whatever the static section says
	if s.args, err = config.SetArgs(cfg, "defrag_online", "defrag", "finetune.nodes", "finetune.traces", "finetune.traces_dir"); err != nil {
		return nil, err
	}
	return newShardedLogs(cfg, s)
}

func (s *onlineDemos) key() any          { return s.k }
func (s *onlineDemos) files() []logFile  { return s.k.Files }
func (s *onlineDemos) podArgs() []string { return s.args }

// unit i is trace i / (loads x seeds), load i / seeds mod loads, seed i mod seeds: the order
// the timelines were always written in.
func (s *onlineDemos) unit(i int) (trace int, load float64, seed uint64) {
	n, l := len(s.seeds), len(s.sec.Loads)
	return i / (l * n), s.sec.Loads[i/n%l], s.seeds[i%n]
}

func (s *onlineDemos) units() []string {
	out := make([]string, len(s.traces)*len(s.sec.Loads)*len(s.seeds))
	for i := range out {
		t, load, seed := s.unit(i)
		out[i] = fmt.Sprintf("%s-load%s-seed%d", s.traces[t].Name, strconv.FormatFloat(load, 'g', -1, 64), seed)
	}
	return out
}

func (s *onlineDemos) metric(invocations int) (pipeline.Metric, error) {
	if invocations == 0 {
		return pipeline.Metric{}, fmt.Errorf("defrag_online.expert %s was never invoked on the timelines: no demonstrations to learn from", s.sec.Expert)
	}
	return pipeline.Metric{Name: "invocations", Value: float64(invocations)}, nil
}

func (s *onlineDemos) load() (*onlineInputs, error) {
	if s.loaded != nil {
		return s.loaded, nil
	}
	nodes, err := sim.LoadNodes(s.nodes)
	if err != nil {
		return nil, fmt.Errorf("finetune.nodes %q: %w", s.nodes, err)
	}
	in := &onlineInputs{nodes: nodes}
	for _, ref := range s.traces {
		trace, err := sim.LoadTasks(ref.Path)
		if err != nil {
			return nil, fmt.Errorf("finetune.traces %s: %w", ref.Name, err)
		}
		model, err := sim.TypicalShapes(trace, 0.95) // the typical shapes `schedrl defrag online` measures with
		if err != nil {
			return nil, fmt.Errorf("finetune.traces %s: %w", ref.Name, err)
		}
		in.traces, in.models = append(in.traces, trace), append(in.models, model)
	}
	s.loaded = in
	return in, nil
}

// make runs the units' timelines one after the other, each invocation a log.
func (s *onlineDemos) make(ctx context.Context, units []int, dir string, log *slog.Logger) ([][]madeLog, error) {
	in, err := s.load()
	if err != nil {
		return nil, err
	}
	oc := online.ConfigOf(s.sec)
	rewards := defragRewards(s.k.Defrag)
	labels := s.units()
	made := make([][]madeLog, len(units))
	for j, u := range units {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t, load, seed := s.unit(u)
		tl := online.TimelineOf(s.sec, in.nodes, in.traces[t], in.models[t], load, seed)
		written, err := online.Demos(tl, oc, s.sec.Expert, rewards, dir, labels[u])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", labels[u], err)
		}
		for _, w := range written {
			made[j] = append(made[j], madeLog{Name: filepath.Base(w), Count: 1})
		}
		log.Info("online demonstrations written", "timeline", labels[u], "invocations", len(written))
	}
	return made, nil
}
