package finetune

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// scratchValueScale sizes a fresh network's value head for returns of about 0.5 GPU per step
// over the 1/(1-gamma) horizon, the scale a pretrained placement head learns from the data.
// A defrag episode ends within its budget and earns about 0.3 GPU per migration, so its
// returns are a plan's total: 30, the scale of the behaviour-cloned greedy migrator's head.
func scratchValueScale(envName string, gamma float64) float64 {
	if envName == env.DefragName {
		return 30
	}
	return 0.5 / (1 - gamma)
}

// models are the network being trained, the frozen pretrained policy the KL penalty refers
// to, and the lineage the checkpoints record.
type models struct {
	cfg    config.Config
	pol    policy
	ref    *policy
	parent string // digest of the pretrained checkpoint, "" from scratch
	spec   env.Spec
}

func newModels(cfg config.Config, spec env.Spec, dev gotch.Device) (*models, error) {
	m := &models{cfg: cfg, spec: spec}
	from := cfg.Finetune.From
	if strings.EqualFold(from, "none") {
		nn.Seed(cfg.Seed)
		arch := nn.NewArch(spec, cfg.Network, scratchValueScale(spec.Env, cfg.Finetune.Gamma))
		arch.Candidates = candidates(spec, cfg.Finetune)
		net, err := nn.NewNet(arch, dev)
		if err != nil {
			return nil, fmt.Errorf("finetune: fresh network: %w", err)
		}
		m.pol = policy{net: net, dev: dev, temperature: cfg.Finetune.Temperature}
		return m, nil
	}
	net, man, err := nn.LoadCheckpoint(from, dev)
	if err != nil {
		return nil, fmt.Errorf("finetune.from: %w", err)
	}
	if net.Arch.Env != spec.Env {
		return nil, fmt.Errorf("finetune.from: %s is a %s network, finetune trains %s", from, net.Arch.Env, spec.Env)
	}
	// The fine-tuned network chooses from finetune.candidates, whatever set it was cloned on.
	net.Arch.Candidates = candidates(spec, cfg.Finetune)
	m.pol, m.parent = policy{net: net, dev: dev, temperature: cfg.Finetune.Temperature}, man.Digest()
	if cfg.Finetune.KLCoef > 0 {
		ref, _, err := nn.LoadCheckpoint(from, dev)
		if err != nil {
			return nil, fmt.Errorf("finetune.from: %w", err)
		}
		m.ref = &policy{net: ref, dev: dev, temperature: cfg.Finetune.Temperature}
	}
	return m, nil
}

// candidates is the placement action set a network trained in spec chooses from ("" for
// other environments).
func candidates(spec env.Spec, cfg config.FinetuneConfig) string {
	if spec.Env != env.PlacementName {
		return ""
	}
	return cfg.Candidates
}

// lineage describes the trained network at st.
func (m *models) lineage(st runState, metrics map[string]float64) nn.Lineage {
	return nn.Lineage{Parent: m.parent, Metrics: metrics,
		Hyper: map[string]any{"finetune": m.cfg.Finetune, "seed": m.cfg.Seed, "updates": st.Update, "env_steps": st.EnvSteps}}
}

// checkpoint writes a resumable checkpoint of the run directory out.
func (m *models) checkpoint(out string, opt *nn.Adam, st runState) error {
	return saveCheckpoint(out, st, func(dir string) error {
		if err := ts.SaveMultiNew(opt.State(), filepath.Join(dir, optimFile)); err != nil {
			return fmt.Errorf("save %s: %w", optimFile, err)
		}
		_, err := nn.SaveCheckpoint(dir, m.pol.net, m.lineage(st, nil))
		return err
	})
}

// restore loads the weights and optimiser state of the checkpoint folder dir.
func (m *models) restore(dir string, opt *nn.Adam) error {
	if err := m.pol.net.VS.Load(filepath.Join(dir, checkpoint.ModelFile)); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	saved, err := ts.LoadMultiWithDevice(filepath.Join(dir, optimFile), m.pol.dev)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, optimFile), err)
	}
	if err := opt.Restore(saved); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, optimFile), err)
	}
	return nil
}

// BestDir is the folder, under a placement run's directory, of the network whose held-out
// evaluation beat every earlier one (the start included). Evaluations move by a few tenths
// from one to the next, so the last network is not always the best validated one.
const BestDir = "best"

// best writes the current network as out/BestDir, manifest last, with its held-out mean.
func (m *models) best(out string, st runState, h heldOut) error {
	dir := filepath.Join(out, BestDir)
	if err := os.Remove(filepath.Join(dir, checkpoint.ManifestFile)); err != nil && !os.IsNotExist(err) {
		return err
	}
	_, err := nn.SaveCheckpoint(dir, m.pol.net, m.lineage(st, map[string]float64{"held_out_mean_alloc_gpu_pct": h.Mean}))
	return err
}

// final makes the run directory itself the fine-tuned checkpoint: model.ot beside the run
// record and the last resumable checkpoint, manifest last.
func (m *models) final(out string, st runState, metrics map[string]float64) error {
	if err := os.Remove(filepath.Join(out, checkpoint.ManifestFile)); err != nil && !os.IsNotExist(err) {
		return err
	}
	_, err := nn.SaveCheckpoint(out, m.pol.net, m.lineage(st, metrics))
	return err
}
