package nn

import (
	"fmt"
	"math"
	"slices"

	"github.com/sugarme/gotch"
	gnn "github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
)

// ArchKind names the network below; bump it when its layers or their names change.
const ArchKind = "entity-mlp-v1"

// MaskedLogit is the logit of an infeasible candidate: far below any real one, yet finite, so
// a softmax over a row stays defined and an infeasible node is never chosen.
const MaskedLogit = -1e9

// Arch is everything needed to rebuild a network: it is stored in the checkpoint manifest.
type Arch struct {
	Kind          string `json:"kind"`
	Env           string `json:"env"`
	FeatureSpec   string `json:"feature_spec"`
	NodeDim       int    `json:"node_dim"`
	TaskDim       int    `json:"task_dim"`
	GlobalDim     int    `json:"global_dim"`
	Hidden        int    `json:"hidden"`
	EncoderLayers int    `json:"encoder_layers"`
	HeadHidden    int    `json:"head_hidden"`
	// ValueScale multiplies the value head's output, so the head trains near unit scale
	// while Value is in return units.
	ValueScale float64 `json:"value_scale"`
	// Candidates is the placement action set the network chooses from (env.Options
	// .Candidates; "" = every feasible node), so a placer offers it the same set it was
	// trained on.
	Candidates string `json:"candidates,omitempty"`
	// TiePrior weighs each node's tie preference (env.Observation.TiePref) in its logit
	// (config.FinetuneConfig.TiePrior); 0: none, as in behaviour-cloned checkpoints.
	TiePrior float64 `json:"tie_prior,omitempty"`
}

// NewArch sizes a network for an environment's observations.
func NewArch(spec env.Spec, cfg config.NetworkConfig, valueScale float64) Arch {
	return Arch{Kind: ArchKind, Env: spec.Env, FeatureSpec: spec.Version,
		NodeDim: len(spec.Node), TaskDim: len(spec.Task), GlobalDim: len(spec.Global),
		Hidden: cfg.Hidden, EncoderLayers: cfg.EncoderLayers, HeadHidden: cfg.HeadHidden,
		ValueScale: valueScale}
}

// WithTiePrior adds TiePrior x pref[i] to each node's logit, in place, and returns logits
// (unchanged when the network has no prior or the observation no tie order).
func (a Arch) WithTiePrior(logits, pref []float32) []float32 {
	if a.TiePrior == 0 || len(pref) == 0 {
		return logits
	}
	w := float32(a.TiePrior)
	for i := range logits {
		logits[i] += w * pref[i]
	}
	return logits
}

func (a Arch) validate() error {
	switch {
	case a.Kind != ArchKind:
		return fmt.Errorf("architecture %q, this build has %q", a.Kind, ArchKind)
	case a.NodeDim < 1 || a.TaskDim < 1 || a.GlobalDim < 0:
		return fmt.Errorf("feature sizes node %d task %d global %d", a.NodeDim, a.TaskDim, a.GlobalDim)
	case a.NodeDim > config.MaxWidth || a.TaskDim > config.MaxWidth || a.GlobalDim > config.MaxWidth:
		return fmt.Errorf("feature sizes node %d task %d global %d: at most %d each", a.NodeDim, a.TaskDim, a.GlobalDim, config.MaxWidth)
	case a.Hidden < 1 || a.EncoderLayers < 1 || a.HeadHidden < 1 ||
		a.Hidden > config.MaxWidth || a.EncoderLayers > config.MaxLayers || a.HeadHidden > config.MaxWidth:
		return fmt.Errorf("layer sizes hidden %d encoder_layers %d head_hidden %d: want 1..%d, 1..%d, 1..%d",
			a.Hidden, a.EncoderLayers, a.HeadHidden, config.MaxWidth, config.MaxLayers, config.MaxWidth)
	case !(a.ValueScale > 0) || math.IsInf(a.ValueScale, 0):
		return fmt.Errorf("value_scale %v", a.ValueScale)
	case !(a.TiePrior >= 0) || math.IsInf(a.TiePrior, 0):
		return fmt.Errorf("tie_prior %v", a.TiePrior)
	}
	return env.CheckCandidates(a.Candidates)
}

// Net is the entity policy/value network. Every node row goes through the same encoder; the
// task (with the cluster's global features) is embedded once; a node's score sees its own
// embedding, its element-wise product with the task embedding, and the cluster context pooled
// (mean and max) over all nodes. Cost is linear in the node count and no weight depends on it,
// so one checkpoint serves clusters of any size.
type Net struct {
	Arch   Arch
	VS     *gnn.VarStore
	params []ts.NamedTensor // the VarStore's own tensors, in creation order

	encoder          []linear
	task             linear
	scoreNode        linear // node embedding -> score hidden
	scoreInteraction linear // node x task product -> score hidden
	scoreContext     linear // task embedding and pooled context -> score hidden (with bias)
	scoreOut         linear
	value1, value2   linear
}

// NewNet builds a freshly initialised network on dev; call Seed first for reproducible weights.
func NewNet(arch Arch, dev gotch.Device) (*Net, error) {
	if err := arch.validate(); err != nil {
		return nil, err
	}
	n := &Net{Arch: arch, VS: gnn.NewVarStore(dev)}
	pinned(func() { n.build() })
	return n, nil
}

// build creates the layers (gotch's initialisers toggle grad mode, hence pinned).
func (n *Net) build() {
	arch := n.Arch
	h, hh := arch.Hidden, arch.HeadHidden
	in := arch.NodeDim
	for l := range arch.EncoderLayers {
		n.encoder = append(n.encoder, n.linear(fmt.Sprintf("encoder%d", l), in, h, true))
		in = h
	}
	n.task = n.linear("task", arch.TaskDim+arch.GlobalDim, h, true)
	n.scoreNode = n.linear("score_node", h, hh, false)
	n.scoreInteraction = n.linear("score_interaction", h, hh, false)
	n.scoreContext = n.linear("score_context", 3*h, hh, true)
	n.scoreOut = n.linear("score_out", hh, 1, true)
	n.value1 = n.linear("value1", 3*h, hh, true)
	n.value2 = n.linear("value2", hh, 1, true)
}

// Params lists the trainable tensors by VarStore name, in a fixed order. They are the
// VarStore's own tensors: keep the Net reachable while using them.
func (n *Net) Params() []ts.NamedTensor { return slices.Clone(n.params) }

// Output is a forward pass over a batch.
type Output struct {
	Logits *ts.Tensor // [B, N]: candidate scores, MaskedLogit where infeasible or padding
	Value  *ts.Tensor // [B]: state value in return units
}

// Drop frees both tensors.
func (o Output) Drop() {
	o.Logits.MustDrop()
	o.Value.MustDrop()
}

// Forward scores every candidate of every observation in the batch. Distinct rows are
// encoded once; the pools read them per candidate without copying them out (embedding bags);
// and only feasible candidates go through the score head, where the node x task interaction
// is folded into per-observation weights, (h ⊙ te) Wi = h (teᵀ ⊙ Wi). Infeasible candidates
// get MaskedLogit without being scored.
func (n *Net) Forward(in *Input) Output {
	h := in.Rows
	for l, enc := range n.encoder {
		h = enc.forward(h, l > 0).MustRelu(true) // [U, H]
	}
	taskIn := ts.MustCat([]*ts.Tensor{in.Task, in.Global}, 1)
	te := n.task.forward(taskIn, true).MustRelu(true) // [B, H]

	// Pools over every candidate: the mean weighs a merged row by the nodes it stands for; the
	// max only asks whether a row is there.
	sum := bag(h, in, embeddingBagSum, in.PoolWeight)
	mean := sum.MustDiv(in.Count, true)
	maxPool := n.maxPool(h, in)
	context := ts.MustCat([]*ts.Tensor{te, mean, maxPool}, 1) // [B, 3H]
	mean.MustDrop()
	maxPool.MustDrop()

	hf := ts.MustEmbedding(h, in.Feasible, -1, false, false) // [B, F, H]
	h.MustDrop()
	teCol := te.MustUnsqueeze(-1, true)                                // [B, H, 1]
	w := n.scoreNode.w.MustAddcmul(teCol, n.scoreInteraction.w, false) // [B, H, HH]
	teCol.MustDrop()
	perSample := n.scoreContext.forward(context, false).MustUnsqueeze(1, true) // [B, 1, HH]
	s := perSample.MustBaddbmm(hf, w, ts.FloatScalar(1), ts.FloatScalar(1), true).MustRelu(true)
	hf.MustDrop()
	w.MustDrop()
	size, feasible := in.Mask.MustSize(), in.Feasible.MustSize()
	flat := s.MustView([]int64{-1, int64(n.Arch.HeadHidden)}, true)
	scores := n.scoreOut.forward(flat, true).MustView(feasible, true) // [B, F]
	// Into columns: padding lands in the extra column N, cut off after.
	all := ts.MustFull([]int64{size[0], size[1] + 1}, ts.FloatScalar(MaskedLogit), gotch.Float, scores.MustDevice())
	placed := all.MustScatter(1, in.FeasibleAt, scores, true)
	scores.MustDrop()
	logits := placed.MustNarrow(1, 0, size[1], true) // [B, N]

	v := n.value1.forward(context, true).MustRelu(true)
	v = n.value2.forward(v, true).MustSqueezeDim(-1, true).MustMulScalar(ts.FloatScalar(n.Arch.ValueScale), true)
	return Output{Logits: logits, Value: v}
}

// maxPool is each observation's element-wise max over its candidates' rows of h. With
// gradients it is an embedding bag, whose backward only routes [B, H] values; without them
// (rollouts, the reference policy) the candidates' rows are gathered and reduced, which is
// several times faster than the bag's scalar loop. Both are exact, so they agree bit for bit.
func (n *Net) maxPool(h *ts.Tensor, in *Input) *ts.Tensor {
	if h.MustRequiresGrad() {
		return bag(h, in, embeddingBagMax, noTensor)
	}
	// Padding points one past the last row, at a zero row: embeddings are non-negative (ReLU),
	// so a zero never wins over a real candidate.
	zero := ts.MustZeros([]int64{1, int64(n.Arch.Hidden)}, gotch.Float, h.MustDevice())
	padded := ts.MustCat([]*ts.Tensor{h, zero}, 0)
	zero.MustDrop()
	hc := ts.MustEmbedding(padded, in.Index, -1, false, false) // [B, N, H]
	padded.MustDrop()
	return hc.MustAmax([]int64{1}, false, true)
}

// Modes of libtorch's embedding_bag.
const (
	embeddingBagSum = 0
	embeddingBagMax = 2
)

// noTensor is libtorch's absent optional tensor.
var noTensor = new(ts.Tensor)

// bag reduces each observation's candidate rows of h ([U, H]) to one [B, H] row.
func bag(h *ts.Tensor, in *Input, mode int64, weight *ts.Tensor) *ts.Tensor {
	out, offset2bag, size, argmax := ts.MustEmbeddingBag(h, in.Pool, in.PoolStart, false, mode, false, weight, false)
	offset2bag.MustDrop()
	size.MustDrop()
	argmax.MustDrop()
	return out
}

// linear is y = x W + b with W stored [in, out], initialised as PyTorch's nn.Linear is
// (uniform in ±1/sqrt(in)).
type linear struct{ w, b *ts.Tensor }

func (n *Net) linear(name string, in, out int, bias bool) linear {
	p := n.VS.Root().Sub(name)
	bound := 1 / math.Sqrt(float64(in))
	l := linear{w: p.MustNewVar("weight", []int64{int64(in), int64(out)}, gnn.NewUniformInit(-bound, bound))}
	n.params = append(n.params, ts.NamedTensor{Name: name + ".weight", Tensor: l.w})
	if bias {
		l.b = p.MustNewVar("bias", []int64{int64(out)}, gnn.NewUniformInit(-bound, bound))
		n.params = append(n.params, ts.NamedTensor{Name: name + ".bias", Tensor: l.b})
	}
	return l
}

// forward applies the layer; del frees x. A matrix input with a bias takes one fused op
// (addmm): a rollout step's forward is bound by the number of ops, not their arithmetic.
func (l linear) forward(x *ts.Tensor, del bool) *ts.Tensor {
	if l.b != nil && x.Dim() == 2 {
		y := l.b.MustAddmm(x, l.w, false)
		if del {
			x.MustDrop()
		}
		return y
	}
	y := x.MustMatmul(l.w, del)
	if l.b != nil {
		y = y.MustAdd(l.b, true)
	}
	return y
}
