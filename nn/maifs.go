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

// MAIFSKind names the multi-agent network below; bump it when its layers or their names change.
const MAIFSKind = "maifs-attention-v1"

// MAIFSArch rebuilds a multi-agent network; checkpoints store it under hyper.arch.
type MAIFSArch struct {
	Kind        string `json:"kind"`
	Env         string `json:"env"`
	FeatureSpec string `json:"feature_spec"`
	AgentDim    int    `json:"agent_dim"`
	ServerDim   int    `json:"server_dim"`
	CandDim     int    `json:"cand_dim"`
	Hidden      int    `json:"hidden"`
	Heads       int    `json:"heads"`
	HeadHidden  int    `json:"head_hidden"`
	// AgentAttention is attention across agents; false is the ablation without it (each agent
	// sees itself and the servers only).
	AgentAttention bool `json:"agent_attention"`
	// Options are the environment's, so a policy offers the network the candidates it learned.
	Options env.MAIFSOptions `json:"options"`
}

// NewMAIFSArch sizes a network for this build's multi-agent layout.
func NewMAIFSArch(hidden, heads, headHidden int, agentAttention bool, opts env.MAIFSOptions) MAIFSArch {
	l := env.MAIFSLayoutOf()
	return MAIFSArch{Kind: MAIFSKind, Env: env.MAIFSName, FeatureSpec: env.MAIFSSpec, AgentDim: len(l.Agent), ServerDim: len(l.Server),
		CandDim: len(l.Cand), Hidden: hidden, Heads: heads, HeadHidden: headHidden, AgentAttention: agentAttention, Options: opts}
}

func (a MAIFSArch) validate() error {
	l := env.MAIFSLayoutOf()
	switch {
	case a.Kind != MAIFSKind:
		return fmt.Errorf("architecture %q, this build has %q", a.Kind, MAIFSKind)
	case a.Env != env.MAIFSName || a.FeatureSpec != env.MAIFSSpec || a.AgentDim != len(l.Agent) || a.ServerDim != len(l.Server) || a.CandDim != len(l.Cand):
		return fmt.Errorf("trained on %s %s (%d agent, %d server, %d candidate features); this build encodes %s %s (%d, %d, %d): retrain or use a matching build",
			a.Env, a.FeatureSpec, a.AgentDim, a.ServerDim, a.CandDim, env.MAIFSName, env.MAIFSSpec, len(l.Agent), len(l.Server), len(l.Cand))
	case a.Hidden < 1 || a.Heads < 1 || a.Hidden%a.Heads != 0 || a.HeadHidden < 1 ||
		a.Hidden > config.MaxWidth || a.HeadHidden > config.MaxWidth:
		return fmt.Errorf("layer sizes hidden %d heads %d head_hidden %d: want hidden and head_hidden in 1..%d, hidden a multiple of heads",
			a.Hidden, a.Heads, a.HeadHidden, config.MaxWidth)
	}
	return a.Options.Check()
}

// attention is multi-head scaled dot-product attention with an output projection.
type attention struct{ q, k, v, o linear }

// MAIFSNet is the multi-agent actor-critic. Agents (jobs) and servers are encoded by shared
// MLPs; agents attend to each other (multi-head, masking padding) and then to the servers,
// both residual, so an agent's embedding knows who else competes and what the cluster holds;
// each candidate allocation is encoded and scored against its agent's embedding (the actor
// head, masked to feasible candidates); an order head scores who decides first; the
// centralised critic attends over all agents with a learned query. No weight depends on the
// number of agents, servers or candidates.
type MAIFSNet struct {
	Arch   MAIFSArch
	VS     *gnn.VarStore
	params []ts.NamedTensor

	agent1, agent2, server, cand linear
	agents, servers              attention
	headCand, headAgent, headOut linear
	order                        linear
	query                        *ts.Tensor
	value1, value2               linear
}

// NewMAIFSNet builds a freshly initialised network on dev; call Seed first for reproducible weights.
func NewMAIFSNet(arch MAIFSArch, dev gotch.Device) (*MAIFSNet, error) {
	if err := arch.validate(); err != nil {
		return nil, err
	}
	n := &MAIFSNet{Arch: arch, VS: gnn.NewVarStore(dev)}
	pinned(func() { n.build() })
	return n, nil
}

func (n *MAIFSNet) build() {
	a, h, hh := n.Arch, n.Arch.Hidden, n.Arch.HeadHidden
	lin := func(name string, in, out int, bias bool) linear {
		return newLinear(n.VS, &n.params, name, in, out, bias)
	}
	att := func(name string) attention {
		return attention{lin(name+"_q", h, h, false), lin(name+"_k", h, h, false), lin(name+"_v", h, h, false), lin(name+"_o", h, h, true)}
	}
	n.agent1, n.agent2 = lin("agent1", a.AgentDim, h, true), lin("agent2", h, h, true)
	n.server = lin("server", a.ServerDim, h, true)
	n.cand = lin("cand", a.CandDim, h, true)
	if a.AgentAttention {
		n.agents = att("agents_attention")
	}
	n.servers = att("servers_attention")
	n.headCand, n.headAgent, n.headOut = lin("head_cand", h, hh, true), lin("head_agent", h, hh, false), lin("head_out", hh, 1, true)
	n.order = lin("order", h, 1, true)
	bound := 1 / math.Sqrt(float64(h))
	n.query = n.VS.Root().Sub("critic").MustNewVar("query", []int64{1, 1, int64(h)}, gnn.NewUniformInit(-bound, bound))
	n.params = append(n.params, ts.NamedTensor{Name: "critic.query", Tensor: n.query})
	n.value1, n.value2 = lin("value1", 2*h, hh, true), lin("value2", hh, 1, true)
}

// newLinear is the linear layer of Net.linear for any VarStore, appending its tensors to params.
func newLinear(vs *gnn.VarStore, params *[]ts.NamedTensor, name string, in, out int, bias bool) linear {
	p := vs.Root().Sub(name)
	bound := 1 / math.Sqrt(float64(in))
	l := linear{w: p.MustNewVar("weight", []int64{int64(in), int64(out)}, gnn.NewUniformInit(-bound, bound))}
	*params = append(*params, ts.NamedTensor{Name: name + ".weight", Tensor: l.w})
	if bias {
		l.b = p.MustNewVar("bias", []int64{int64(out)}, gnn.NewUniformInit(-bound, bound))
		*params = append(*params, ts.NamedTensor{Name: name + ".bias", Tensor: l.b})
	}
	return l
}

// Params lists the trainable tensors in a fixed order (keep the net reachable while using them).
func (n *MAIFSNet) Params() []ts.NamedTensor { return slices.Clone(n.params) }

// MAIFSOutput is a forward pass over a batch; every tensor belongs to the scope it ran in.
type MAIFSOutput struct {
	Logits *ts.Tensor // [B, N, K], MaskedLogit where infeasible or padding
	Order  *ts.Tensor // [B, N], MaskedLogit at padding
	Value  *ts.Tensor // [B]
}

// Forward runs the network on in; every intermediate tensor is owned by s (drop it after
// backward).
func (n *MAIFSNet) Forward(s *Scope, in *MAIFSInput) MAIFSOutput {
	h := int64(n.Arch.Hidden)
	b, na, k := in.B, in.N, in.K
	relu := func(x *ts.Tensor) *ts.Tensor { return s.Own(x.MustRelu(false)) }
	fwd := func(l linear, x *ts.Tensor) *ts.Tensor { return s.Own(l.forward(x, false)) }
	ha := relu(fwd(n.agent2, relu(fwd(n.agent1, in.Agents)))) // [B, N, H]
	hs := relu(fwd(n.server, in.Servers))                     // [B, S, H]
	if n.Arch.AgentAttention {
		ha = s.Own(ha.MustAdd(n.agents.forward(s, ha, ha, in.AgentPad, n.Arch.Heads), false))
	}
	ha = s.Own(ha.MustAdd(n.servers.forward(s, ha, hs, in.ServerPad, n.Arch.Heads), false))

	hc := relu(fwd(n.cand, in.Cands))                                     // [B, N, K, H]
	agentTerm := s.Own(fwd(n.headAgent, ha).MustUnsqueeze(2, false))      // [B, N, 1, HH]
	z := relu(s.Own(fwd(n.headCand, hc).MustAdd(agentTerm, false)))       // [B, N, K, HH]
	logits := s.Own(fwd(n.headOut, z).MustView([]int64{b, na, k}, false)) // [B, N, K]
	logits = s.Own(logits.MustMaskedFill(in.CandOff, ts.FloatScalar(MaskedLogit), false))
	order := s.Own(fwd(n.order, ha).MustView([]int64{b, na}, false))
	order = s.Own(order.MustMaskedFill(in.AgentPad, ts.FloatScalar(MaskedLogit), false))

	// The critic: a learned query attends over every agent, beside the agents' mean.
	q := s.Own(n.query.MustExpand([]int64{b, 1, h}, true, false))
	att := s.Own(q.MustMatmul(s.Own(ha.MustTranspose(1, 2, false)), false).MustMulScalar(ts.FloatScalar(1/math.Sqrt(float64(h))), true)) // [B, 1, N]
	att = s.Own(att.MustMaskedFill(s.Own(in.AgentPad.MustUnsqueeze(1, false)), ts.FloatScalar(MaskedLogit), false))
	att = s.Own(att.MustSoftmax(-1, gotch.Float, false))
	pooled := s.Own(att.MustMatmul(ha, false).MustView([]int64{b, h}, true))
	real := s.Own(in.AgentReal.MustUnsqueeze(-1, false))
	mean := s.Own(s.Own(ha.MustMul(real, false).MustSumDimIntlist([]int64{1}, false, gotch.Float, true)).MustDiv(in.AgentCount, false))
	v := relu(fwd(n.value1, s.Own(ts.MustCat([]*ts.Tensor{pooled, mean}, 1))))
	value := s.Own(fwd(n.value2, v).MustView([]int64{b}, false))
	return MAIFSOutput{Logits: logits, Order: order, Value: value}
}

// forward attends from x ([B, N, H]) over y ([B, M, H]), ignoring y's rows where pad ([B, M]) is set.
func (a attention) forward(s *Scope, x, y, pad *ts.Tensor, heads int) *ts.Tensor {
	size := x.MustSize()
	b, nq, h := size[0], size[1], size[2]
	m := y.MustSize()[1]
	d := h / int64(heads)
	split := func(t *ts.Tensor, rows int64) *ts.Tensor { // [B, R, H] -> [B, heads, R, d]
		return s.Own(s.Own(t.MustView([]int64{b, rows, int64(heads), d}, false)).MustTranspose(1, 2, false))
	}
	q := split(s.Own(a.q.forward(x, false)), nq)
	k := split(s.Own(a.k.forward(y, false)), m)
	v := split(s.Own(a.v.forward(y, false)), m)
	scores := s.Own(s.Own(q.MustMatmul(s.Own(k.MustTranspose(2, 3, false)), false)).MustMulScalar(ts.FloatScalar(1/math.Sqrt(float64(d))), false))
	mask := s.Own(s.Own(pad.MustUnsqueeze(1, false)).MustUnsqueeze(1, false)) // [B, 1, 1, M]
	scores = s.Own(scores.MustMaskedFill(mask, ts.FloatScalar(MaskedLogit), false))
	w := s.Own(scores.MustSoftmax(-1, gotch.Float, false))
	out := s.Own(s.Own(w.MustMatmul(v, false)).MustTranspose(1, 2, false)) // [B, N, heads, d]
	out = s.Own(out.MustContiguous(false).MustView([]int64{b, nq, h}, true))
	return s.Own(a.o.forward(out, false))
}
