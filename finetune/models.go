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

// models are the network being trained, its Polyak average when avg_decay is on, the
// frozen pretrained policy the KL penalty refers to, and the lineage the checkpoints record.
type models struct {
	cfg    config.Config
	pol    policy
	avg    *policy
	ref    *policy
	parent string // digest of the pretrained checkpoint, "" from scratch
	spec   env.Spec
}

// avgFile holds the averaged weights in a resumable checkpoint.
const avgFile = "avg.ot"

// newModels builds the networks for src's episodes: a fresh one (finetune.from none) or the
// checkpoint finetune.from.
func newModels(cfg config.Config, src episodeSource, dev gotch.Device) (*models, error) {
	spec := src.spec()
	m := &models{cfg: cfg, spec: spec}
	from := cfg.Finetune.From
	if strings.EqualFold(from, "none") {
		nn.Seed(cfg.Seed)
		arch := nn.NewArch(spec, cfg.Network, src.valueScale(cfg.Finetune.Gamma))
		arch.Candidates, arch.TiePrior = src.candidates(cfg.Finetune), cfg.Finetune.TiePrior
		net, err := nn.NewNet(arch, dev)
		if err != nil {
			return nil, fmt.Errorf("finetune: fresh network: %w", err)
		}
		m.pol = policy{net: net, dev: dev, temperature: cfg.Finetune.Temperature}
		return m, m.startAverage()
	}
	net, man, err := nn.LoadCheckpoint(from, dev)
	if err != nil {
		return nil, fmt.Errorf("finetune.from: %w", err)
	}
	if net.Arch.Env != spec.Env {
		return nil, fmt.Errorf("finetune.from: %s is a %s network, finetune trains %s", from, net.Arch.Env, spec.Env)
	}
	// The fine-tuned network chooses from finetune.candidates with finetune.tie_prior,
	// whatever it was cloned with.
	net.Arch.Candidates, net.Arch.TiePrior = src.candidates(cfg.Finetune), cfg.Finetune.TiePrior
	m.pol, m.parent = policy{net: net, dev: dev, temperature: cfg.Finetune.Temperature}, man.Digest()
	if cfg.Finetune.KLCoef > 0 {
		ref, _, err := nn.LoadCheckpoint(from, dev)
		if err != nil {
			return nil, fmt.Errorf("finetune.from: %w", err)
		}
		m.ref = &policy{net: ref, dev: dev, temperature: cfg.Finetune.Temperature}
	}
	return m, m.startAverage()
}

// startAverage starts the averaged network at the trained one's weights, when avg_decay is on.
func (m *models) startAverage() error {
	if m.cfg.Finetune.AvgDecay == 0 {
		return nil
	}
	net, err := nn.NewNet(m.pol.net.Arch, m.pol.dev)
	if err != nil {
		return fmt.Errorf("finetune: averaged network: %w", err)
	}
	if err := net.VS.Copy(m.pol.net.VS); err != nil {
		return fmt.Errorf("finetune: averaged network: %w", err)
	}
	m.avg = &policy{net: net, dev: m.pol.dev, temperature: m.pol.temperature}
	return nil
}

// average moves the averaged weights 1-avg_decay of the way to the trained ones.
func (m *models) average() {
	if m.avg == nil {
		return
	}
	d := m.cfg.Finetune.AvgDecay
	trained := m.pol.net.Params()
	nn.NoGrad(func() {
		for i, a := range m.avg.net.Params() {
			a.Tensor.MustMulScalar_(ts.FloatScalar(d))
			step := trained[i].Tensor.MustMulScalar(ts.FloatScalar(1-d), false)
			a.Tensor.MustAdd_(step)
			step.MustDrop()
		}
	})
}

// deployed is the network evaluations measure and best/ and the final checkpoint hold.
func (m *models) deployed() policy {
	if m.avg != nil {
		return *m.avg
	}
	return m.pol
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
		if m.avg != nil {
			if err := nn.SaveWeights(m.avg.net, filepath.Join(dir, avgFile)); err != nil {
				return err
			}
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
	if err := restoreAdam(dir, opt, m.pol.dev); err != nil {
		return err
	}
	if m.avg != nil {
		if err := m.avg.net.VS.Load(filepath.Join(dir, avgFile)); err != nil {
			return fmt.Errorf("%s (a run with avg_decay resumes only from its own checkpoints): %w", filepath.Join(dir, avgFile), err)
		}
	}
	return nil
}

// BestDir is the folder, under a placement run's directory, of the network whose held-out
// evaluation beat every earlier one (the start included). Evaluations move by a few tenths
// from one to the next, so the last network is not always the best validated one.
const BestDir = "best"

// best writes the deployed network as out/BestDir, manifest last, with its held-out mean.
func (m *models) best(out string, st runState, h heldOut) error {
	dir := filepath.Join(out, BestDir)
	if err := os.Remove(filepath.Join(dir, checkpoint.ManifestFile)); err != nil && !os.IsNotExist(err) {
		return err
	}
	_, err := nn.SaveCheckpoint(dir, m.deployed().net, m.lineage(st, map[string]float64{"held_out_mean_alloc_gpu_pct": h.Mean}))
	return err
}

// final makes the run directory itself the fine-tuned checkpoint of the deployed network:
// model.ot beside the run record and the last resumable checkpoint, manifest last.
func (m *models) final(out string, st runState, metrics map[string]float64) error {
	if err := os.Remove(filepath.Join(out, checkpoint.ManifestFile)); err != nil && !os.IsNotExist(err) {
		return err
	}
	_, err := nn.SaveCheckpoint(out, m.deployed().net, m.lineage(st, metrics))
	return err
}
