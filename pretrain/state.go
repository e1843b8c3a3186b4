package pretrain

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/sugarme/gotch/ts"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
)

// Files of the output directory.
const (
	RunRecordFile = "run.json"
	stateDir      = ".train"
	stateFile     = "state.json"
	optimFile     = "optim.ot"
)

// EpochMetrics is one epoch's line of the run record.
type EpochMetrics struct {
	Epoch     int     `json:"epoch"` // 1-based
	Steps     int     `json:"steps"` // optimiser steps so far
	LR        float64 `json:"lr"`    // at the epoch's last step
	TrainLoss float64 `json:"train_loss"`
	TrainCE   float64 `json:"train_ce"`
	TrainVal  float64 `json:"train_value_loss"`
	// ValAgreement counts a choice as the expert's when it is as good under the expert's own
	// score (same FGD fragment change, so identical nodes tie); ValExact needs the same node.
	ValAgreement float64 `json:"val_agreement"`
	ValExact     float64 `json:"val_exact_agreement"`
	ValCE        float64 `json:"val_ce"`
	ValValueLoss float64 `json:"val_value_loss"`
	ValSamples   int     `json:"val_samples"`
	// ValStages is the agreement per stage of a multi-stage environment (defrag: pick the task,
	// pick its target).
	ValStages []StageMetrics `json:"val_stages,omitempty"`
	Seconds   float64        `json:"seconds"` // wall time of the run so far
}

// StageMetrics is one stage's validation agreement.
type StageMetrics struct {
	Stage     int     `json:"stage"`
	Samples   int     `json:"samples"`
	Agreement float64 `json:"agreement"`
	Exact     float64 `json:"exact"`
}

// RunRecord is run.json.
type RunRecord struct {
	Config      config.PretrainConfig `json:"config"`
	Network     config.NetworkConfig  `json:"network"`
	Seed        int64                 `json:"seed"`
	Device      string                `json:"device"`
	DatasetHash string                `json:"dataset_hash"`
	ConfigHash  string                `json:"config_hash"`
	Epochs      []EpochMetrics        `json:"epochs"`
	BestEpoch   int                   `json:"best_epoch"`
	StopReason  string                `json:"stop_reason,omitempty"`
}

// state is the resume position, saved in .train/state.json beside the weights and moments.
type state struct {
	ConfigHash   string         `json:"config_hash"`
	Epoch        int            `json:"epoch"` // 0-based epoch in progress
	Batch        int            `json:"batch"` // batches of it already trained on
	Step         int            `json:"step"`
	EpochLoss    float64        `json:"epoch_loss"` // sums over the epoch's samples so far
	EpochCE      float64        `json:"epoch_ce"`
	EpochValue   float64        `json:"epoch_value_loss"`
	EpochSamples int            `json:"epoch_samples"`
	BestEpoch    int            `json:"best_epoch"`
	Best         float64        `json:"best_val_agreement"`
	BadEpochs    int            `json:"bad_epochs"`
	History      []EpochMetrics `json:"history"`
	Seconds      float64        `json:"seconds"` // wall time spent before this process
	Done         bool           `json:"done"`
	StopReason   string         `json:"stop_reason,omitempty"`
}

// newTrainer opens the datasets, builds or restores the network and optimiser, and sizes the
// schedule.
func newTrainer(o Options) (*trainer, error) {
	c := o.Pretrain
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("pretrain.%w", err)
	}
	if err := o.Network.Validate(); err != nil {
		return nil, fmt.Errorf("network.%w", err)
	}
	if c.Dataset == "" {
		return nil, errors.New("pretrain.dataset: must name a dataset directory")
	}
	t := &trainer{o: o, cfg: c, log: o.Log, seed: o.Seed, began: time.Now()}
	if t.log == nil {
		t.log = slog.Default()
	}
	if c.Seed != 0 {
		t.seed = c.Seed
	}
	var err error
	if t.dev, err = nn.Device(o.Device); err != nil {
		return nil, err
	}
	if t.data, err = datasets.Open(c.Dataset); err != nil {
		return nil, err
	}
	if len(t.data.Episodes(datasets.SplitTrain)) == 0 {
		return nil, fmt.Errorf("pretrain.dataset: %s has no training episodes", c.Dataset)
	}
	if t.val, err = openVal(c, t.data); err != nil {
		return nil, err
	}
	spec, err := env.SpecOf(t.data.Manifest.Env)
	if err != nil {
		return nil, err
	}
	dsHash, err := fileHash(filepath.Join(c.Dataset, datasets.ManifestFile))
	if err != nil {
		return nil, err
	}
	t.lin = nn.Lineage{DatasetHash: dsHash, ConfigHash: configHash(o, t.seed, dsHash), CodeRevision: o.CodeRevision,
		Hyper: map[string]any{"pretrain": c, "seed": t.seed}}
	trainRows := t.data.Manifest.Splits[datasets.SplitTrain].Rows
	t.stepsPerEpoch = int((trainRows + int64(c.BatchSize) - 1) / int64(c.BatchSize))
	if c.StepsPerEpoch > 0 {
		t.stepsPerEpoch = min(t.stepsPerEpoch, c.StepsPerEpoch)
	}
	t.totalSteps = c.Epochs * t.stepsPerEpoch
	if c.MaxSteps > 0 {
		t.totalSteps = min(t.totalSteps, c.MaxSteps)
	}

	nn.Seed(t.seed)
	arch := nn.NewArch(spec, o.Network, valueScale(t.data.Manifest))
	if t.net, err = nn.NewNet(arch, t.dev); err != nil {
		return nil, err
	}
	t.opt = nn.NewAdam(t.net.Params(), nn.AdamConfig{Beta1: c.Beta1, Beta2: c.Beta2, Eps: c.Eps, WeightDecay: c.WeightDecay})
	t.st = state{ConfigHash: t.lin.ConfigHash, BestEpoch: 0, Best: -1}
	if err := t.restore(); err != nil {
		return nil, err
	}
	if o.Bar != nil && !t.st.Done {
		t.bar = progressbar.NewOptions(t.totalSteps, progressbar.OptionSetWriter(o.Bar),
			progressbar.OptionSetDescription("pretrain"), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("step"), progressbar.OptionThrottle(200e6))
		t.bar.Set(t.st.Step)
	}
	t.log.Info("pretrain: start", "dataset", c.Dataset, "train_rows", trainRows, "val_rows", t.val.rows(),
		"steps_per_epoch", t.stepsPerEpoch, "total_steps", t.totalSteps, "resumed_at_step", t.st.Step,
		"device", t.dev.Name, "seed", t.seed)
	return t, nil
}

// valueScale is the size of a typical return-to-go: the mean reward over (1 - gamma).
func valueScale(m *datasets.Manifest) float64 {
	s := math.Abs(m.Reward.Mean) / math.Max(1e-6, 1-m.Gamma)
	if !(s >= 1) || math.IsInf(s, 0) {
		return 1
	}
	return s
}

// configHash names what decides the trained weights: the pretrain section without paths, the
// network, the seed and the training data.
func configHash(o Options, seed int64, datasetHash string) string {
	c := o.Pretrain
	c.Out, c.Dataset, c.ValDataset = "", "", ""
	data, _ := json.Marshal(struct {
		Pretrain config.PretrainConfig
		Network  config.NetworkConfig
		Seed     int64
		Dataset  string
	}{c, o.Network, seed, datasetHash})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func fileHash(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// restore loads .train/ when the output directory holds a run of the same config.
func (t *trainer) restore() error {
	dir := filepath.Join(t.cfg.Out, stateDir)
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(t.cfg.Out, checkpoint.ManifestFile)); err == nil {
			return fmt.Errorf("pretrain.out: %s holds a checkpoint without training state; choose another out or remove it", t.cfg.Out)
		}
		return nil
	}
	if err != nil {
		return err
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	if st.ConfigHash != t.lin.ConfigHash {
		return fmt.Errorf("pretrain.out: %s holds a run of another config or dataset (config hash %.12s, this run %.12s); choose another out or remove it",
			t.cfg.Out, st.ConfigHash, t.lin.ConfigHash)
	}
	net, _, err := nn.LoadCheckpoint(dir, t.dev)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if net.Arch != t.net.Arch {
		return fmt.Errorf("resume: %s: architecture %+v, config asks for %+v", dir, net.Arch, t.net.Arch)
	}
	optState, loadErr := ts.LoadMultiWithDevice(filepath.Join(dir, optimFile), t.dev)
	if loadErr != nil {
		return fmt.Errorf("resume: %s: %w", filepath.Join(dir, optimFile), loadErr)
	}
	t.net = net
	t.opt = nn.NewAdam(net.Params(), nn.AdamConfig{Beta1: t.cfg.Beta1, Beta2: t.cfg.Beta2, Eps: t.cfg.Eps, WeightDecay: t.cfg.WeightDecay})
	if err := t.opt.Restore(optState); err != nil {
		return fmt.Errorf("resume: %s: %w", filepath.Join(dir, optimFile), err)
	}
	if t.opt.Steps() != int64(st.Step) {
		return fmt.Errorf("resume: %s: optimiser has %d steps, state says %d", dir, t.opt.Steps(), st.Step)
	}
	t.st = st
	t.log.Info("pretrain: resuming", "out", t.cfg.Out, "epoch", st.Epoch+1, "batch", st.Batch, "step", st.Step)
	return nil
}

// saveState writes .train/ as a whole (weights, moments, position) through a temporary
// directory: an interrupted save leaves the previous state.
func (t *trainer) saveState() error {
	dir, err := atomicfile.CreateDir(filepath.Join(t.cfg.Out, stateDir), true)
	if err != nil {
		return err
	}
	defer dir.Abort()
	if _, err := nn.SaveCheckpoint(dir.Tmp, t.net, t.lin); err != nil {
		return err
	}
	if err := ts.SaveMultiNew(t.opt.State(), filepath.Join(dir.Tmp, optimFile)); err != nil {
		return fmt.Errorf("save optimiser state: %w", err)
	}
	st := t.st
	st.Seconds = t.seconds()
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir.Tmp, stateFile), data, 0o644); err != nil {
		return err
	}
	return dir.Commit()
}

// endEpoch validates, records the epoch, keeps the best weights as the output checkpoint,
// applies early stopping and saves the state.
func (t *trainer) endEpoch() error {
	vm, err := t.validate()
	if err != nil {
		return err
	}
	n := float64(max(1, t.st.EpochSamples))
	m := EpochMetrics{Epoch: t.st.Epoch + 1, Steps: t.st.Step, LR: learningRate(t.cfg, max(0, t.st.Step-1), t.totalSteps),
		TrainLoss: t.st.EpochLoss / n, TrainCE: t.st.EpochCE / n, TrainVal: t.st.EpochValue / n,
		ValAgreement: vm.agreement(), ValExact: vm.exact(), ValCE: vm.ce / float64(max(1, vm.n)),
		ValValueLoss: vm.value / float64(max(1, vm.n)), ValSamples: vm.n, ValStages: vm.perStage(), Seconds: t.seconds()}
	t.st.History = append(t.st.History, m)
	if t.bar != nil {
		t.bar.Clear() // the epoch line goes where the bar was; the next step redraws it
	}
	t.log.Info("pretrain: epoch", "epoch", m.Epoch, "steps", m.Steps, "train_loss", fmt.Sprintf("%.4f", m.TrainLoss),
		"val_agreement", fmt.Sprintf("%.4f", m.ValAgreement), "val_exact", fmt.Sprintf("%.4f", m.ValExact),
		"val_ce", fmt.Sprintf("%.4f", m.ValCE), "val_value_loss", fmt.Sprintf("%.4f", m.ValValueLoss))
	for _, st := range m.ValStages {
		t.log.Info("pretrain: epoch stage", "epoch", m.Epoch, "stage", st.Stage, "samples", st.Samples,
			"val_agreement", fmt.Sprintf("%.4f", st.Agreement), "val_exact", fmt.Sprintf("%.4f", st.Exact))
	}
	improved := m.ValAgreement > t.st.Best+t.cfg.MinDelta || t.st.Best < 0
	if improved {
		t.st.Best, t.st.BestEpoch, t.st.BadEpochs = m.ValAgreement, m.Epoch, 0
	} else {
		t.st.BadEpochs++
	}
	t.st.Epoch++
	t.st.Batch, t.st.EpochLoss, t.st.EpochCE, t.st.EpochValue, t.st.EpochSamples = 0, 0, 0, 0, 0
	switch {
	case t.cfg.Patience > 0 && t.st.BadEpochs >= t.cfg.Patience:
		t.st.Done, t.st.StopReason = true, fmt.Sprintf("early stop: no better validation agreement for %d epochs", t.st.BadEpochs)
	case t.st.Step >= t.totalSteps:
		t.st.Done, t.st.StopReason = true, fmt.Sprintf("step budget of %d reached", t.totalSteps)
	case t.st.Epoch >= t.cfg.Epochs:
		t.st.Done, t.st.StopReason = true, fmt.Sprintf("%d epochs done", t.cfg.Epochs)
	}
	if err := t.writeOutput(improved); err != nil {
		return err
	}
	return t.saveState()
}

// writeOutput writes run.json, then (when the epoch improved) the weights, then the
// manifest, last, over the best epoch's weights.
func (t *trainer) writeOutput(improved bool) error {
	rec := RunRecord{Config: t.cfg, Network: t.o.Network, Seed: t.seed, Device: t.dev.Name, DatasetHash: t.lin.DatasetHash,
		ConfigHash: t.lin.ConfigHash, Epochs: t.st.History, BestEpoch: t.st.BestEpoch, StopReason: t.st.StopReason}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(t.cfg.Out, 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(t.cfg.Out, RunRecordFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if improved {
		_, err = nn.SaveCheckpoint(t.cfg.Out, t.net, t.lineage())
	} else {
		_, err = nn.WriteManifest(t.cfg.Out, t.net.Arch, t.lineage())
	}
	return err
}

// lineage is the output checkpoint's: the best epoch's metrics and every epoch's curves.
func (t *trainer) lineage() nn.Lineage {
	lin := t.lin
	lin.Metrics = map[string]float64{}
	lin.History = map[string][]checkpoint.Step{}
	for _, m := range t.st.History {
		for name, v := range map[string]float64{"train_loss": m.TrainLoss, "val_agreement": m.ValAgreement,
			"val_exact_agreement": m.ValExact, "val_ce": m.ValCE, "val_value_loss": m.ValValueLoss} {
			lin.History[name] = append(lin.History[name], checkpoint.Step{Step: int64(m.Epoch), Value: v})
			if m.Epoch == t.st.BestEpoch {
				lin.Metrics[name] = v
			}
		}
		for _, st := range m.ValStages {
			if m.Epoch == t.st.BestEpoch {
				lin.Metrics[fmt.Sprintf("val_agreement_stage%d", st.Stage)] = st.Agreement
				lin.Metrics[fmt.Sprintf("val_exact_agreement_stage%d", st.Stage)] = st.Exact
			}
		}
	}
	lin.Metrics["best_epoch"] = float64(t.st.BestEpoch)
	return lin
}
