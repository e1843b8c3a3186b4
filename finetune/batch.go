package finetune

import (
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/nn"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// sample is one stored decision: its observation (copied out of the env's reused buffers)
// and what the rollout did with it.
type sample struct {
	obs env.Observation

	action int
	logp   float32 // log-probability of action under the rollout policy
	value  float32
	reward float32
	done   bool // the step ended the episode
}

// store copies obs into s, reusing s's buffers.
func (s *sample) store(obs *env.Observation) {
	o := &s.obs
	o.Stage, o.NumNodes = obs.Stage, obs.NumNodes
	o.Nodes = append(o.Nodes[:0], obs.Nodes...)
	o.Mask = append(o.Mask[:0], obs.Mask...)
	o.Task = append(o.Task[:0], obs.Task...)
	o.Global = append(o.Global[:0], obs.Global...)
}

// input pads samples to their widest cluster and moves them to dev; padding nodes carry a
// false mask, so they never get probability.
func input(arch nn.Arch, samples []*sample, dev gotch.Device) (*nn.Input, error) {
	width := 0
	for _, s := range samples {
		width = max(width, s.obs.NumNodes)
	}
	hb := nn.NewHostBatch(arch, len(samples), width)
	for j, s := range samples {
		if err := hb.Put(j, &s.obs); err != nil {
			return nil, err
		}
	}
	return hb.Tensors(dev), nil
}

func tensorOf[T float32 | int64](data []T, shape []int64, dev gotch.Device) *ts.Tensor {
	t := ts.MustOfSlice(data).MustView(shape, true)
	if dev != gotch.CPU {
		t = t.MustTo(dev, true)
	}
	return t
}
