package config

import (
	"fmt"
	"slices"
	"strings"
)

// FinetuneConfig configures `schedrl finetune`: PPO in the placement or the defrag environment,
// warm-started from a behaviour-cloned checkpoint. Every hyper-parameter of the algorithm is a field here, in
// the order the training loop uses them (episodes, rollout, advantages, loss, update), so the
// struct reads like CleanRL's single-file PPO.
type FinetuneConfig struct {
	// From is the pretrained checkpoint directory; "none" trains from scratch with the same budget.
	From string `mapstructure:"from" yaml:"from"`
	// Out is the run directory: checkpoints, run record (metrics.jsonl), final checkpoint.
	Out string `mapstructure:"out" yaml:"out"`
	// Env is the environment trained in: placement (episodes are arrival sequences) or defrag
	// (episodes are migration plans on fragmented starting states made with the defrag
	// section's departures, max_pending and placer; budget and reward weights from there too)
	// or defrag-online (episodes are timelines of the online world, the defrag_online section)
	// or maifs (multi-agent PPO of the MAIFS policy in the fungible world: episodes, validation
	// and the world from the maifs section, not this section's nodes, traces and seeds)
	// or drr (placement in the openb timed world on defrag_online's timelines, rewarded by the
	// time-integrated fragmentation rate and queueing: DRR's agent, docs/drr.md).
	Env string `mapstructure:"env" yaml:"env"`

	// Episode mix: each episode draws a trace, a seed and a cluster size uniformly from these.
	// Nodes is the node list CSV; Traces are openb pod-list short names or CSV paths.
	Nodes     string   `mapstructure:"nodes" yaml:"nodes"`
	Traces    []string `mapstructure:"traces" yaml:"traces"`
	TracesDir string   `mapstructure:"traces_dir" yaml:"traces_dir"`
	// Seeds are the training workload seeds ("A-B,C"); they must not meet EvalSeeds (nor, for
	// defrag, DefragHeldOut).
	Seeds string `mapstructure:"seeds" yaml:"seeds"`
	// ClusterSizes are node counts of random subsets of the node list (0: the whole list); the
	// workload is tuned to the subset's GPU capacity, so a small cluster is a cheap episode.
	ClusterSizes []int   `mapstructure:"cluster_sizes" yaml:"cluster_sizes"`
	Tune         float64 `mapstructure:"tune" yaml:"tune"`
	Coverage     float64 `mapstructure:"coverage" yaml:"coverage"`
	// Reward = RewardPlaced x GPUs placed - RewardFragment x fragment added (in GPUs); keep it
	// equal to the datasets section so the pretrained critic's scale still holds.
	RewardPlaced   float64 `mapstructure:"reward_placed" yaml:"reward_placed"`
	RewardFragment float64 `mapstructure:"reward_fragment" yaml:"reward_fragment"`
	// Candidates is the placement action set: feasible (every feasible node) or fgd-best (the
	// feasible nodes with FGD's best integer score: the policy learns the choice FGD leaves
	// to its tie order). The checkpoint records it, so placers offer the same set.
	Candidates string `mapstructure:"candidates" yaml:"candidates"`

	// Rollout: NumEnvs episodes step in lockstep, RolloutSteps each per update, on Workers
	// goroutines (0: one per CPU), one batched network forward per step.
	NumEnvs      int `mapstructure:"num_envs" yaml:"num_envs"`
	RolloutSteps int `mapstructure:"rollout_steps" yaml:"rollout_steps"`
	Workers      int `mapstructure:"workers" yaml:"workers"`
	// RolloutWorkers, when > 0, rolls out in that many worker processes of
	// pipeline.executor (goroutines of this process with the local executor, pods of an
	// Indexed Job with kubernetes), environment copy c on worker c mod RolloutWorkers, each
	// with update U's weights from the store; the learner here waits for every worker's part
	// of U before updating (docs/distributed.md). 0: the copies step in this process.
	RolloutWorkers int `mapstructure:"rollout_workers" yaml:"rollout_workers"`
	// Stagger spreads the environment copies over their episodes before the first update
	// (placement only): copy i runs the policy unrecorded until it is i/NumEnvs of the way
	// through its episode. Otherwise the copies start, and end, their episodes together, and
	// every rollout holds NumEnvs copies of one phase (an idle cluster, then a full one).
	Stagger bool `mapstructure:"stagger" yaml:"stagger"`
	// TotalSteps is the budget in environment steps (decisions), over all envs.
	TotalSteps int `mapstructure:"total_steps" yaml:"total_steps"`
	// Temperature divides the logits of the policy PPO samples from and optimises (its
	// rollouts, ratios, entropy and KL): below 1 the rollouts stay close to the greedy
	// decisions that are deployed and evaluated, which a softmax over many near-equal nodes
	// at 1 is not (it spreads tasks; docs/finetune.md). Greedy decisions do not depend on it.
	Temperature float64 `mapstructure:"temperature" yaml:"temperature"`
	// TiePrior (placement) is added, times each node's tie preference (1 for the scheduler's
	// most preferred node down to 1/n), to every logit of the fine-tuned policy, whatever the
	// checkpoint it starts from had: among nearly equal scores the policy then keeps choosing
	// the same nodes, most of what FGD's tie order is worth (docs/finetune.md). It is part of
	// the policy: rollouts, updates, evaluations and the checkpoint's placer all use it.
	TiePrior float64 `mapstructure:"tie_prior" yaml:"tie_prior"`

	// Advantages: generalised advantage estimation.
	Gamma     float64 `mapstructure:"gamma" yaml:"gamma"`
	GAELambda float64 `mapstructure:"gae_lambda" yaml:"gae_lambda"`
	NormAdv   bool    `mapstructure:"norm_adv" yaml:"norm_adv"`

	// Loss: clipped surrogate + VFCoef x value loss - EntCoef x entropy + KL coefficient x
	// KL(pretrained || current). The KL coefficient starts at KLCoef and decays linearly to 0
	// over the first KLDecay fraction of the updates (0 keeps it constant); KLCoef 0 is off.
	ClipCoef  float64 `mapstructure:"clip_coef" yaml:"clip_coef"`
	ClipVLoss bool    `mapstructure:"clip_vloss" yaml:"clip_vloss"`
	VFCoef    float64 `mapstructure:"vf_coef" yaml:"vf_coef"`
	EntCoef   float64 `mapstructure:"ent_coef" yaml:"ent_coef"`
	KLCoef    float64 `mapstructure:"kl_coef" yaml:"kl_coef"`
	KLDecay   float64 `mapstructure:"kl_decay" yaml:"kl_decay"`

	// Update: Epochs passes over the rollout in Minibatches shuffled mini-batches; Adam with
	// global-norm gradient clipping; the learning rate anneals linearly to 0 when AnnealLR.
	Epochs      int     `mapstructure:"epochs" yaml:"epochs"`
	Minibatches int     `mapstructure:"minibatches" yaml:"minibatches"`
	LR          float64 `mapstructure:"lr" yaml:"lr"`
	AnnealLR    bool    `mapstructure:"anneal_lr" yaml:"anneal_lr"`
	AdamEps     float64 `mapstructure:"adam_eps" yaml:"adam_eps"`
	MaxGradNorm float64 `mapstructure:"max_grad_norm" yaml:"max_grad_norm"`
	// TargetKL stops an update's epochs early once the approximate KL to the rollout policy
	// passes it (0: never).
	TargetKL float64 `mapstructure:"target_kl" yaml:"target_kl"`
	// AvgDecay turns on Polyak averaging of the weights: after each update the averaged
	// network moves 1-AvgDecay of the way to the trained one, and it is the network the
	// held-out evaluations measure and best/ and the final checkpoint hold (0: off, the
	// trained network itself). Rollouts and updates use the trained network either way.
	AvgDecay float64 `mapstructure:"avg_decay" yaml:"avg_decay"`

	// CheckpointEvery updates, and at the end, the run directory gets a resumable checkpoint.
	CheckpointEvery int `mapstructure:"checkpoint_every" yaml:"checkpoint_every"`
	// Held-out evaluation every EvalEvery updates (0: only at the start and the end): greedy
	// placement at Tune on EvalSeeds of the first trace, on EvalClusterSize nodes (0: the
	// whole node list, the acceptance setting; smaller only for quick tests).
	EvalEvery       int    `mapstructure:"eval_every" yaml:"eval_every"`
	EvalSeeds       string `mapstructure:"eval_seeds" yaml:"eval_seeds"`
	EvalClusterSize int    `mapstructure:"eval_cluster_size" yaml:"eval_cluster_size"`
}

// DefragHeldOut are the first and last seed of the defrag states every method is compared on
// (docs/defrag.md): a defrag run never trains on them.
var DefragHeldOut = [2]uint64{49, 53}

// SetDefaults is the measured short run on the default openb trace: training seeds away from
// the held-out 49..51, 256- and 512-node sub-clusters, a small learning rate and a constant KL
// pull towards the pretrained policy (larger steps lost held-out allocation within 10k steps,
// docs/finetune.md).
func (c *FinetuneConfig) SetDefaults() {
	*c = FinetuneConfig{
		From:         "runs/pretrain",
		Out:          "runs/finetune",
		Env:          "placement",
		Nodes:        "data/openb/openb_node_list_gpu_node.csv",
		Traces:       []string{"default"},
		TracesDir:    "data/openb",
		Seeds:        "1000-9999",
		ClusterSizes: []int{256, 512},
		Tune:         1.3, Coverage: 0.95,
		RewardPlaced: 1, RewardFragment: 1, Candidates: "feasible",
		NumEnvs: 8, RolloutSteps: 128, TotalSteps: 40960, Temperature: 1,
		Gamma: 0.99, GAELambda: 0.95, NormAdv: true,
		ClipCoef: 0.2, ClipVLoss: true, VFCoef: 0.5, EntCoef: 0, KLCoef: 0.5, KLDecay: 0,
		Epochs: 2, Minibatches: 4, LR: 2e-5, AnnealLR: true, AdamEps: 1e-5, MaxGradNorm: 0.5,
		CheckpointEvery: 5, EvalEvery: 10, EvalSeeds: "49-51",
	}
}

// FinetuneEnvs are the families a fine-tune can train; family.Register adds a family the
// binary links beyond these.
var FinetuneEnvs = []string{"placement", "defrag", "defrag-online", "maifs", "drr"}

// Validate checks every field's range; whether files exist is checked when training starts.
func (c FinetuneConfig) Validate() error {
	unit := func(x float64) bool { return x >= 0 && x <= 1 }
	switch {
	case strings.TrimSpace(c.From) == "":
		return fmt.Errorf("from: name a checkpoint directory or none")
	case c.Out == "":
		return fmt.Errorf("out: must name a directory")
	case !slices.Contains(FinetuneEnvs, c.Env):
		return fmt.Errorf("env: must be %s or %s, got %q", strings.Join(FinetuneEnvs[:len(FinetuneEnvs)-1], ", "), FinetuneEnvs[len(FinetuneEnvs)-1], c.Env)
	case c.Nodes == "":
		return fmt.Errorf("nodes: must name a node list CSV")
	case len(c.Traces) == 0:
		return fmt.Errorf("traces: list at least one trace")
	case len(c.ClusterSizes) == 0:
		return fmt.Errorf("cluster_sizes: list at least one size (0 = every node)")
	case !(c.Tune > 0 && c.Tune <= 10):
		return fmt.Errorf("tune: must be in (0, 10], got %v", c.Tune)
	case !(c.Coverage > 0 && c.Coverage <= 1):
		return fmt.Errorf("coverage: must be in (0, 1], got %v", c.Coverage)
	case c.RewardPlaced < 0:
		return fmt.Errorf("reward_placed: must be >= 0, got %g", c.RewardPlaced)
	case c.RewardFragment < 0:
		return fmt.Errorf("reward_fragment: must be >= 0, got %g", c.RewardFragment)
	case c.Candidates != "feasible" && c.Candidates != "fgd-best":
		return fmt.Errorf("candidates: must be feasible or fgd-best, got %q", c.Candidates)
	case c.Env != "placement" && c.Candidates != "feasible":
		return fmt.Errorf("candidates: %s narrows placement decisions; env %s takes feasible", c.Candidates, c.Env)
	case c.NumEnvs < 1:
		return fmt.Errorf("num_envs: must be >= 1, got %d", c.NumEnvs)
	case c.RolloutSteps < 1:
		return fmt.Errorf("rollout_steps: must be >= 1, got %d", c.RolloutSteps)
	case c.Stagger && c.Env != "placement":
		return fmt.Errorf("stagger: spreads placement episodes; env %s restarts its short episodes often", c.Env)
	case c.Workers < 0:
		return fmt.Errorf("workers: must be >= 0, got %d", c.Workers)
	case c.RolloutWorkers < 0 || c.RolloutWorkers > c.NumEnvs:
		return fmt.Errorf("rollout_workers: must be in [0, num_envs = %d] (each worker steps at least one environment copy), got %d", c.NumEnvs, c.RolloutWorkers)
	case c.RolloutWorkers > 0 && c.Env == "maifs":
		return fmt.Errorf("rollout_workers: env maifs rolls out in this process only; set 0")
	case c.TotalSteps < c.NumEnvs*c.RolloutSteps:
		return fmt.Errorf("total_steps: must cover one update (num_envs x rollout_steps = %d), got %d", c.NumEnvs*c.RolloutSteps, c.TotalSteps)
	case !(c.Temperature > 0 && c.Temperature <= 10):
		return fmt.Errorf("temperature: must be in (0, 10], got %g", c.Temperature)
	case !(c.TiePrior >= 0 && c.TiePrior <= 100):
		return fmt.Errorf("tie_prior: must be in [0, 100], got %g", c.TiePrior)
	case c.TiePrior > 0 && c.Env != "placement":
		return fmt.Errorf("tie_prior: weighs placement nodes by the scheduler's tie order; env %s has none", c.Env)
	case !(c.Gamma > 0 && c.Gamma <= 1):
		return fmt.Errorf("gamma: must be in (0, 1], got %g", c.Gamma)
	case !unit(c.GAELambda):
		return fmt.Errorf("gae_lambda: must be in [0, 1], got %g", c.GAELambda)
	case !(c.ClipCoef > 0):
		return fmt.Errorf("clip_coef: must be > 0, got %g", c.ClipCoef)
	case c.VFCoef < 0:
		return fmt.Errorf("vf_coef: must be >= 0, got %g", c.VFCoef)
	case c.EntCoef < 0:
		return fmt.Errorf("ent_coef: must be >= 0, got %g", c.EntCoef)
	case c.KLCoef < 0:
		return fmt.Errorf("kl_coef: must be >= 0, got %g", c.KLCoef)
	case !unit(c.KLDecay):
		return fmt.Errorf("kl_decay: must be in [0, 1], got %g", c.KLDecay)
	case c.Epochs < 1:
		return fmt.Errorf("epochs: must be >= 1, got %d", c.Epochs)
	case c.Minibatches < 1 || c.Minibatches > c.NumEnvs*c.RolloutSteps:
		return fmt.Errorf("minibatches: must be in [1, num_envs x rollout_steps = %d], got %d", c.NumEnvs*c.RolloutSteps, c.Minibatches)
	case !(c.LR > 0):
		return fmt.Errorf("lr: must be > 0, got %g", c.LR)
	case !(c.AdamEps > 0):
		return fmt.Errorf("adam_eps: must be > 0, got %g", c.AdamEps)
	case c.MaxGradNorm < 0:
		return fmt.Errorf("max_grad_norm: must be >= 0 (0: no clipping), got %g", c.MaxGradNorm)
	case c.TargetKL < 0:
		return fmt.Errorf("target_kl: must be >= 0 (0: off), got %g", c.TargetKL)
	case !(c.AvgDecay >= 0 && c.AvgDecay < 1):
		return fmt.Errorf("avg_decay: must be in [0, 1) (0: off), got %g", c.AvgDecay)
	case c.CheckpointEvery < 1:
		return fmt.Errorf("checkpoint_every: must be >= 1, got %d", c.CheckpointEvery)
	case c.EvalEvery < 0:
		return fmt.Errorf("eval_every: must be >= 0, got %d", c.EvalEvery)
	case c.EvalClusterSize < 0:
		return fmt.Errorf("eval_cluster_size: must be >= 0 (0: every node), got %d", c.EvalClusterSize)
	}
	for i, n := range c.ClusterSizes {
		if n < 0 {
			return fmt.Errorf("cluster_sizes[%d]: must be >= 0, got %d", i, n)
		}
	}
	for i, t := range c.Traces {
		if strings.TrimSpace(t) == "" {
			return fmt.Errorf("traces[%d]: empty", i)
		}
	}
	train, err := ParseSeeds(c.Seeds)
	if err != nil {
		return fmt.Errorf("seeds: %w", err)
	}
	held, err := ParseSeeds(c.EvalSeeds)
	if err != nil {
		return fmt.Errorf("eval_seeds: %w", err)
	}
	heldSet := map[uint64]bool{}
	for _, s := range held {
		heldSet[s] = true
	}
	if c.Env == "defrag" {
		for s := DefragHeldOut[0]; s <= DefragHeldOut[1]; s++ {
			heldSet[s] = true
		}
	}
	for _, s := range train {
		if heldSet[s] {
			return fmt.Errorf("seeds: %d is also a held-out eval seed", s)
		}
	}
	return nil
}
