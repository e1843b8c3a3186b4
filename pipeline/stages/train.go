package stages

import (
	"context"

	"github.com/schedrl/schedrl/pipeline"
)

// Trainer is a training stage (pretrain, finetune) as the command layer links it in: the
// packages that train link libtorch, so this package only sees their entry point.
type Trainer struct {
	// Key is the part of the config that decides the trained weights (section, seed, device
	// kind); paths and worker counts stay out.
	Key any
	// Run trains from in (the dataset, or the checkpoint to fine-tune) into env.OutDir. With
	// env.Resumed, env.OutDir holds the checkpoints of an interrupted run to continue from.
	Run func(ctx context.Context, in pipeline.Output, env pipeline.Env) (pipeline.Result, error)
}

type trainStage struct {
	name, input string
	t           *Trainer
}

func newTrain(name string, t *Trainer) pipeline.Stage {
	if t == nil {
		return unavailable(name, "package "+name+" has not landed")
	}
	input := map[string]string{"pretrain": "datasets", "finetune": "pretrain"}[name]
	return &trainStage{name: name, input: input, t: t}
}

func (s *trainStage) Name() string     { return s.name }
func (s *trainStage) Inputs() []string { return []string{s.input} }
func (s *trainStage) Config() any      { return s.t.Key }
func (s *trainStage) Resumable() bool  { return true }

func (s *trainStage) Run(ctx context.Context, env pipeline.Env) (pipeline.Result, error) {
	return s.t.Run(ctx, env.Inputs[s.input], env)
}
