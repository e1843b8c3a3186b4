package config

import (
	"fmt"
	"slices"
)

// PretrainConfig configures `schedrl pretrain`: behaviour cloning of the expert's decisions in
// a dataset (masked cross-entropy) plus value regression on the stored return-to-go.
type PretrainConfig struct {
	// Dataset is a dataset directory (`schedrl datasets build`). Its train split trains; its
	// val split validates unless ValDataset is set, whose episodes then all validate (e.g. a
	// dataset of other seeds built with val_fraction 0).
	Dataset    string `mapstructure:"dataset" yaml:"dataset"`
	ValDataset string `mapstructure:"val_dataset" yaml:"val_dataset"`
	// Out is the checkpoint directory; a run resumes from the training state it holds.
	Out string `mapstructure:"out" yaml:"out"`
	// Epochs bounds the passes over the training episodes; BatchSize is decisions per step.
	Epochs    int `mapstructure:"epochs" yaml:"epochs"`
	BatchSize int `mapstructure:"batch_size" yaml:"batch_size"`
	// MaxSteps, when > 0, stops training after that many optimiser steps in all (a budget).
	MaxSteps int `mapstructure:"max_steps" yaml:"max_steps"`
	// StepsPerEpoch, when > 0, caps the optimiser steps of one epoch (a sampled epoch).
	StepsPerEpoch int `mapstructure:"steps_per_epoch" yaml:"steps_per_epoch"`
	// Optimiser: Adam with this learning rate, betas, epsilon and decoupled weight decay.
	LR          float64 `mapstructure:"lr" yaml:"lr"`
	Beta1       float64 `mapstructure:"beta1" yaml:"beta1"`
	Beta2       float64 `mapstructure:"beta2" yaml:"beta2"`
	Eps         float64 `mapstructure:"eps" yaml:"eps"`
	WeightDecay float64 `mapstructure:"weight_decay" yaml:"weight_decay"`
	// LRSchedule is constant, cosine or linear decay to LRMin over the run, after
	// WarmupSteps of linear warm-up.
	LRSchedule  string  `mapstructure:"lr_schedule" yaml:"lr_schedule"`
	LRMin       float64 `mapstructure:"lr_min" yaml:"lr_min"`
	WarmupSteps int     `mapstructure:"warmup_steps" yaml:"warmup_steps"`
	// GradClip is the largest global L2 norm of the gradient; 0 disables clipping.
	GradClip float64 `mapstructure:"grad_clip" yaml:"grad_clip"`
	// ValueCoef weighs the value loss against the cross-entropy.
	ValueCoef float64 `mapstructure:"value_coef" yaml:"value_coef"`
	// Patience stops training after that many epochs without a better validation agreement
	// (by more than MinDelta); 0 disables early stopping. The checkpoint keeps the best epoch.
	Patience int     `mapstructure:"patience" yaml:"patience"`
	MinDelta float64 `mapstructure:"min_delta" yaml:"min_delta"`
	// Expert is the placement policy the dataset logged (see schedrl sim); validation counts a
	// choice as agreeing when this policy scores it as high as its own (ties are common).
	Expert string `mapstructure:"expert" yaml:"expert"`
	// ValMaxSamples, when > 0, validates on that many decisions of each val episode, spread
	// evenly over it.
	ValMaxSamples int `mapstructure:"val_max_samples" yaml:"val_max_samples"`
	// CheckpointEvery saves the training state every that many steps (besides each epoch end).
	CheckpointEvery int `mapstructure:"checkpoint_every" yaml:"checkpoint_every"`
	// Seed drives initialisation and shuffling; 0 uses the top-level seed.
	Seed int64 `mapstructure:"seed" yaml:"seed"`
}

// LRSchedules are the accepted lr_schedule values.
var LRSchedules = []string{"constant", "cosine", "linear"}

// SetDefaults fills the built-in defaults: a few minutes of training on 2 CPU cores.
func (c *PretrainConfig) SetDefaults() {
	c.Out = "runs/pretrain"
	c.Epochs = 3
	c.BatchSize = 32
	c.LR = 3e-3
	c.Beta1 = 0.9
	c.Beta2 = 0.999
	c.Eps = 1e-8
	c.LRSchedule = "cosine"
	c.LRMin = 1e-4
	c.WarmupSteps = 50
	c.GradClip = 1
	c.ValueCoef = 0.5
	c.Patience = 2
	c.CheckpointEvery = 200
	c.Expert = "fgd"
}

// Validate checks ranges; Dataset may be empty here and come from a flag.
func (c PretrainConfig) Validate() error {
	switch {
	case c.Out == "":
		return fmt.Errorf("out: must name a checkpoint directory")
	case c.Epochs < 1:
		return fmt.Errorf("epochs: must be >= 1, got %d", c.Epochs)
	case c.BatchSize < 1:
		return fmt.Errorf("batch_size: must be >= 1, got %d", c.BatchSize)
	case c.MaxSteps < 0:
		return fmt.Errorf("max_steps: must be >= 0, got %d", c.MaxSteps)
	case c.StepsPerEpoch < 0:
		return fmt.Errorf("steps_per_epoch: must be >= 0, got %d", c.StepsPerEpoch)
	case !(c.LR > 0):
		return fmt.Errorf("lr: must be > 0, got %g", c.LR)
	case c.Beta1 < 0 || c.Beta1 >= 1:
		return fmt.Errorf("beta1: must be in [0, 1), got %g", c.Beta1)
	case c.Beta2 < 0 || c.Beta2 >= 1:
		return fmt.Errorf("beta2: must be in [0, 1), got %g", c.Beta2)
	case !(c.Eps > 0):
		return fmt.Errorf("eps: must be > 0, got %g", c.Eps)
	case c.WeightDecay < 0:
		return fmt.Errorf("weight_decay: must be >= 0, got %g", c.WeightDecay)
	case !slices.Contains(LRSchedules, c.LRSchedule):
		return fmt.Errorf("lr_schedule: unknown schedule %q (want one of %v)", c.LRSchedule, LRSchedules)
	case c.LRMin < 0 || c.LRMin > c.LR:
		return fmt.Errorf("lr_min: must be in [0, lr=%g], got %g", c.LR, c.LRMin)
	case c.WarmupSteps < 0:
		return fmt.Errorf("warmup_steps: must be >= 0, got %d", c.WarmupSteps)
	case c.GradClip < 0:
		return fmt.Errorf("grad_clip: must be >= 0, got %g", c.GradClip)
	case c.ValueCoef < 0:
		return fmt.Errorf("value_coef: must be >= 0, got %g", c.ValueCoef)
	case c.Patience < 0:
		return fmt.Errorf("patience: must be >= 0, got %d", c.Patience)
	case c.MinDelta < 0:
		return fmt.Errorf("min_delta: must be >= 0, got %g", c.MinDelta)
	case c.Expert == "":
		return fmt.Errorf("expert: must name the placement policy the dataset logged")
	case c.ValMaxSamples < 0:
		return fmt.Errorf("val_max_samples: must be >= 0, got %d", c.ValMaxSamples)
	case c.CheckpointEvery < 0:
		return fmt.Errorf("checkpoint_every: must be >= 0, got %d", c.CheckpointEvery)
	}
	return nil
}
