// Package pretrain behaviour-clones a placement expert from a dataset of its decisions: masked
// cross-entropy of the network's candidate scores against the logged action, plus regression of
// the value head on the stored return-to-go, so that PPO starts from a good policy and a warm
// critic. Training is resumable from its last saved state and deterministic for a seed on CPU.
//
// The output directory is a checkpoint (model.ot + manifest.json, the best validation epoch)
// with run.json, the per-epoch run record; .train/ holds the resume state (weights, Adam
// moments, position), hidden so it is not part of the checkpoint.
package pretrain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
)

// Options are what Run needs besides the config sections.
type Options struct {
	Pretrain     config.PretrainConfig
	Network      config.NetworkConfig
	Device       config.DeviceConfig
	Seed         int64  // the top-level seed; Pretrain.Seed overrides it when non-zero
	CodeRevision string // recorded in the manifest
	Log          *slog.Logger
	Bar          io.Writer // draw a progress bar here (a terminal); nil logs plain lines
	// AfterStep, when set, is called after every optimiser step; an error aborts the run at
	// once without saving (tests use it to simulate a crash).
	AfterStep func(step int) error
}

// Result summarises a finished run.
type Result struct {
	Dir        string
	Epochs     int // epochs completed
	Steps      int
	Best       EpochMetrics // the epoch whose weights the checkpoint holds
	StopReason string
	Elapsed    time.Duration // training wall time, earlier processes of a resumed run included
}

// Run trains into o.Pretrain.Out, resuming from the state there when it belongs to the same
// config. Cancelling ctx saves the state and returns ctx's error.
func Run(ctx context.Context, o Options) (*Result, error) {
	t, err := newTrainer(o)
	if err != nil {
		return nil, err
	}
	defer t.close()
	if t.st.Done {
		t.resumedDone = true
		t.log.Info("pretrain: already complete", "out", t.cfg.Out, "best_epoch", t.st.BestEpoch)
		return t.result(), nil
	}
	if err := t.train(ctx); err != nil {
		return nil, err
	}
	res := t.result()
	t.log.Info("pretrain: done", "out", t.cfg.Out, "epochs", res.Epochs, "steps", res.Steps,
		"best_epoch", res.Best.Epoch, "val_agreement", fmt.Sprintf("%.4f", res.Best.ValAgreement),
		"val_exact", fmt.Sprintf("%.4f", res.Best.ValExact), "stop", res.StopReason, "elapsed", res.Elapsed.Round(time.Second))
	return res, nil
}

// trainer is one run's state.
type trainer struct {
	o    Options
	cfg  config.PretrainConfig
	log  *slog.Logger
	seed int64
	dev  gotch.Device
	data *datasets.Dataset
	val  valSet
	net  *nn.Net
	opt  *nn.Adam
	st   state
	lin  nn.Lineage
	// stepsPerEpoch and totalSteps fix the learning-rate schedule before training starts.
	stepsPerEpoch, totalSteps int
	bar                       *progressbar.ProgressBar
	began                     time.Time
	resumedDone               bool // the output already held a finished run
}

// seconds is the run's wall time, earlier processes of a resumed run included.
func (t *trainer) seconds() float64 { return t.st.Seconds + time.Since(t.began).Seconds() }

func (t *trainer) close() {
	if t.bar != nil {
		t.bar.Finish()
	}
}

// train runs epochs from the saved position until the budget, the epochs or patience run out.
func (t *trainer) train(ctx context.Context) error {
	for t.st.Epoch < t.cfg.Epochs && !t.st.Done {
		if err := t.epoch(ctx); err != nil {
			return err
		}
	}
	return nil
}

// epoch trains the rest of the current epoch, validates and saves.
func (t *trainer) epoch(ctx context.Context) error {
	epoch := t.st.Epoch
	bo := datasets.DefaultBatchOptions(datasets.SplitTrain, t.cfg.BatchSize)
	bo.Seed, bo.Epoch = uint64(t.seed), epoch
	batches, err := t.data.Batches(bo)
	if err != nil {
		return err
	}
	defer batches.Close()
	// A resumed epoch replays the batches already trained on without training: the data
	// order depends only on (seed, epoch), so the rest of the epoch sees what it would have.
	for range t.st.Batch {
		if _, err := batches.Next(); err != nil {
			return fmt.Errorf("resume: epoch %d batch %d: %w", epoch, t.st.Batch, err)
		}
	}
	for t.st.Batch < t.stepsPerEpoch && t.st.Step < t.totalSteps {
		if err := ctx.Err(); err != nil {
			if serr := t.saveState(); serr != nil {
				return errors.Join(err, serr)
			}
			return fmt.Errorf("pretrain interrupted at step %d; state saved in %s, rerun to resume: %w",
				t.st.Step, filepath.Join(t.cfg.Out, stateDir), err)
		}
		b, err := batches.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		loss := t.step(b)
		t.st.Step++
		t.st.Batch++
		t.st.EpochLoss += loss.total * float64(b.Size)
		t.st.EpochCE += loss.ce * float64(b.Size)
		t.st.EpochValue += loss.value * float64(b.Size)
		t.st.EpochSamples += b.Size
		t.progress(loss)
		if t.cfg.CheckpointEvery > 0 && t.st.Step%t.cfg.CheckpointEvery == 0 {
			if err := t.saveState(); err != nil {
				return err
			}
		}
		if t.o.AfterStep != nil {
			if err := t.o.AfterStep(t.st.Step); err != nil {
				return err
			}
		}
	}
	return t.endEpoch()
}

// stepLoss is one step's loss terms (means over the batch).
type stepLoss struct{ total, ce, value float64 }

// step is one optimiser update on a batch.
func (t *trainer) step(b *datasets.Batch) stepLoss {
	hb := hostBatch(b)
	in := hb.Tensors(t.dev)
	defer in.Drop()
	action := nn.HostTensor(widen(b.Action[:b.Size]), []int64{int64(b.Size), 1}, t.dev)
	defer action.MustDrop()
	rtg := nn.HostTensor(b.ReturnToGo[:b.Size], []int64{int64(b.Size)}, t.dev)
	defer rtg.MustDrop()

	var l stepLoss
	t.opt.ZeroGrad()
	nn.WithGrad(func() {
		out := t.net.Forward(in)
		ce, value := losses(out, action, rtg, t.net.Arch.ValueScale)
		out.Drop()
		total := ce.MustAdd(value.MustMulScalar(ts.FloatScalar(t.cfg.ValueCoef), false), false)
		total.MustBackward()
		l = stepLoss{total: scalar(total), ce: scalar(ce), value: scalar(value)}
	})
	t.opt.ClipGradNorm(t.cfg.GradClip)
	t.opt.Step(learningRate(t.cfg, t.st.Step, t.totalSteps))
	return l
}

// losses are the masked cross-entropy against the expert's action and the value regression
// (in units of ValueScale, so both terms are near unit scale). Masked logits are MaskedLogit,
// whose probability underflows to zero: the softmax is over feasible nodes only.
func losses(out nn.Output, action, rtg *ts.Tensor, valueScale float64) (ce, value *ts.Tensor) {
	logp := out.Logits.MustLogSoftmax(1, gotch.Float, false)
	ce = logp.MustGather(1, action, false, true).MustMean(gotch.Float, true).MustNeg(true)
	s := ts.FloatScalar(valueScale)
	v := out.Value.MustDivScalar(s, false)
	target := rtg.MustDivScalar(s, false)
	value = v.MustMseLoss(target, 1, true) // reduction 1: mean
	target.MustDrop()
	return ce, value
}

// scalar reads a one-element tensor and frees it.
func scalar(t *ts.Tensor) float64 { return t.Float64Values(true)[0] }

func widen(xs []int32) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}

// hostBatch views a dataset batch as the network's host batch (no copy).
func hostBatch(b *datasets.Batch) *nn.HostBatch {
	return &nn.HostBatch{Size: b.Size, MaxNodes: b.MaxNodes, NodeDim: b.NodeDim, TaskDim: b.TaskDim, GlobalDim: b.GlobalDim,
		NumNodes: b.NumNodes, Nodes: b.Nodes, Mask: b.Mask, Task: b.Task, Global: b.Global}
}

// learningRate is the schedule at step (0-based) of total: linear warm-up, then constant,
// cosine or linear decay to LRMin.
func learningRate(c config.PretrainConfig, step, total int) float64 {
	if step < c.WarmupSteps {
		return c.LR * float64(step+1) / float64(c.WarmupSteps)
	}
	span := max(1, total-c.WarmupSteps)
	frac := math.Min(1, float64(step-c.WarmupSteps)/float64(span))
	switch c.LRSchedule {
	case "cosine":
		return c.LRMin + (c.LR-c.LRMin)*0.5*(1+math.Cos(math.Pi*frac))
	case "linear":
		return c.LR + (c.LRMin-c.LR)*frac
	}
	return c.LR
}

func (t *trainer) progress(l stepLoss) {
	if t.bar != nil {
		t.bar.Describe(fmt.Sprintf("pretrain epoch %d loss %.3f", t.st.Epoch+1, l.total))
		t.bar.Add(1)
		return
	}
	if every := max(1, t.stepsPerEpoch/10); t.st.Batch%every == 0 {
		t.log.Info("pretrain: step", "epoch", t.st.Epoch+1, "step", t.st.Step, "of", t.totalSteps,
			"loss", fmt.Sprintf("%.4f", l.total), "ce", fmt.Sprintf("%.4f", l.ce), "value_loss", fmt.Sprintf("%.4f", l.value),
			"lr", fmt.Sprintf("%.2e", learningRate(t.cfg, t.st.Step-1, t.totalSteps)))
	}
}

func (t *trainer) result() *Result {
	secs := t.st.Seconds
	if !t.resumedDone {
		secs = t.seconds()
	}
	r := &Result{Dir: t.cfg.Out, Epochs: len(t.st.History), Steps: t.st.Step, StopReason: t.st.StopReason,
		Elapsed: time.Duration(secs * float64(time.Second))}
	for _, m := range t.st.History {
		if m.Epoch == t.st.BestEpoch {
			r.Best = m
		}
	}
	return r
}
