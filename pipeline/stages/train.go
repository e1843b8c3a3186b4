package stages

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
)

// TrainFunc runs a training stage (pretrain or finetune) as the command layer links it in:
// the training packages link libtorch, so this package only sees their entry point. cfg has
// the stage's input and output set (pretrain.dataset and pretrain.out, or finetune.from and
// finetune.out = env.OutDir). With env.Resumed, env.OutDir holds the checkpoints of an
// interrupted run with the same key, to continue from.
type TrainFunc func(ctx context.Context, cfg config.Config, env pipeline.Env) (pipeline.Result, error)

type trainStage struct {
	name, input string
	cfg         config.Config
	run         TrainFunc
	key         any
}

// trainKey is what decides the trained weights: the stage's section without its locations
// and worker count, the network, the seed, the device (CPU and CUDA round differently) and
// the content of the reference files it reads.
type trainKey struct {
	Section any                  `json:"section"`
	Env     any                  `json:"env,omitempty"` // the family's own sections (family.Family.Sections)
	Network config.NetworkConfig `json:"network"`
	Seed    int64                `json:"seed"`
	Device  string               `json:"device"`
	Files   []logFile            `json:"files,omitempty"`
}

func newPretrain(cfg config.Config, run TrainFunc) (pipeline.Stage, error) {
	if run == nil {
		return nil, errors.New("stage pretrain: no training function (Deps.Pretrain)")
	}
	sec := cfg.Pretrain
	sec.Dataset, sec.Out = "", ""
	files := map[string]string{}
	if sec.ValDataset != "" {
		files["val_dataset"] = filepath.Join(sec.ValDataset, "manifest.json")
		sec.ValDataset = ""
	}
	if f, ok := family.Get(cfg.Datasets.Env); ok && f.PretrainFiles != nil {
		maps.Copy(files, f.PretrainFiles(cfg))
	}
	hashes, err := hashFiles("pretrain", files)
	if err != nil {
		return nil, err
	}
	key := trainKey{Section: sec, Network: cfg.Network, Seed: cfg.Seed, Device: cfg.Device.Name, Files: hashes}
	return &trainStage{name: "pretrain", input: "datasets", cfg: cfg, run: run, key: key}, nil
}

func newFinetune(cfg config.Config, run TrainFunc) (pipeline.Stage, error) {
	if run == nil {
		return nil, errors.New("stage finetune: no training function (Deps.Finetune)")
	}
	sec := cfg.Finetune
	files := map[string]string{"nodes": sec.Nodes}
	for _, t := range sec.Traces {
		ref, err := eval.ParseTraceRef(t, sec.TracesDir)
		if err != nil {
			return nil, fmt.Errorf("finetune.traces: %w", err)
		}
		files["trace "+ref.Name] = ref.Path
	}
	hashes, err := hashFiles("finetune", files)
	if err != nil {
		return nil, err
	}
	sec.From, sec.Out, sec.Workers, sec.Nodes, sec.TracesDir = "", "", 0, "", ""
	key := trainKey{Section: sec, Network: cfg.Network, Seed: cfg.Seed, Device: cfg.Device.Name, Files: hashes}
	if f, ok := family.Get(sec.Env); ok && f.Sections != nil {
		key.Env = f.Sections(cfg)
	}
	return &trainStage{name: "finetune", input: "pretrain", cfg: cfg, run: run, key: key}, nil
}

func (s *trainStage) Name() string     { return s.name }
func (s *trainStage) Inputs() []string { return []string{s.input} }
func (s *trainStage) Config() any      { return s.key }
func (s *trainStage) Resumable() bool  { return true }

func (s *trainStage) Run(ctx context.Context, env pipeline.Env) (pipeline.Result, error) {
	cfg := s.cfg
	in := env.Inputs[s.input].Dir
	switch s.name {
	case "pretrain":
		cfg.Pretrain.Dataset, cfg.Pretrain.Out = in, env.OutDir
	case "finetune":
		cfg.Finetune.From, cfg.Finetune.Out = checkpointDir(in), env.OutDir
	}
	return s.run(ctx, cfg, env)
}

// checkpointDir is the checkpoint a training stage's output holds: its final/ folder when it
// has one (pretrain keeps resumable checkpoints beside it), else the output itself.
func checkpointDir(out string) string {
	final := filepath.Join(out, "final")
	if _, err := os.Stat(filepath.Join(final, checkpoint.ManifestFile)); err == nil {
		return final
	}
	return out
}
