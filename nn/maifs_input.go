package nn

import (
	"fmt"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"github.com/schedrl/schedrl/env"
)

// MAIFSInput is a batch of multi-agent observations padded to the batch's largest agent,
// server and candidate counts (N, S, K), on a device; a Scope owns its tensors.
type MAIFSInput struct {
	B, N, S, K int64
	Agents     *ts.Tensor // [B, N, agent features]
	Servers    *ts.Tensor // [B, S, server features]
	Cands      *ts.Tensor // [B, N, K, candidate features]
	CandOff    *ts.Tensor // [B, N, K] bool: infeasible or padding
	AgentPad   *ts.Tensor // [B, N] bool: padding
	ServerPad  *ts.Tensor // [B, S] bool: padding
	AgentReal  *ts.Tensor // [B, N] float: 1 for a real agent
	AgentCount *ts.Tensor // [B, 1] float: real agents
}

// MAIFSHost is a batch on the host, before it goes to a device.
type MAIFSHost struct {
	B, N, S, K, A, SD, C int
	agents, servers      []float32
	cands                []float32
	candOff, agentPad    []bool
	serverPad            []bool
	agentReal, count     []float32
}

// NewMAIFSHost pads obs into one batch.
func NewMAIFSHost(arch MAIFSArch, obs []*env.MAIFSObs) (*MAIFSHost, error) {
	h := &MAIFSHost{B: len(obs), A: arch.AgentDim, SD: arch.ServerDim, C: arch.CandDim}
	for _, o := range obs {
		h.N = max(h.N, o.NumAgents())
		h.S = max(h.S, len(o.Servers)/h.SD)
		for _, c := range o.Cand {
			h.K = max(h.K, len(c))
		}
	}
	h.N, h.S, h.K = max(h.N, 1), max(h.S, 1), max(h.K, 1)
	h.agents = make([]float32, h.B*h.N*h.A)
	h.servers = make([]float32, h.B*h.S*h.SD)
	h.cands = make([]float32, h.B*h.N*h.K*h.C)
	h.candOff, h.agentPad, h.serverPad = make([]bool, h.B*h.N*h.K), make([]bool, h.B*h.N), make([]bool, h.B*h.S)
	h.agentReal, h.count = make([]float32, h.B*h.N), make([]float32, h.B)
	for i := range h.candOff {
		h.candOff[i] = true
	}
	for b, o := range obs {
		n, s := o.NumAgents(), len(o.Servers)/h.SD
		if len(o.Agents) != n*h.A || len(o.Servers) != s*h.SD || len(o.Cands) != o.CandStart[n]*h.C {
			return nil, fmt.Errorf("maifs observation %d: rows of %d, %d and %d features, the network reads %d, %d and %d", b, len(o.Agents)/max(n, 1), h.SD, len(o.Cands)/max(o.CandStart[n], 1), h.A, h.SD, h.C)
		}
		copy(h.agents[b*h.N*h.A:], o.Agents)
		copy(h.servers[b*h.S*h.SD:], o.Servers)
		for i := range h.N {
			h.agentPad[b*h.N+i] = i >= n
			if i < n {
				h.agentReal[b*h.N+i] = 1
			}
		}
		for j := range h.S {
			h.serverPad[b*h.S+j] = j >= s
		}
		h.count[b] = float32(max(n, 1))
		for i := range n {
			base := (b*h.N + i) * h.K
			copy(h.cands[base*h.C:], o.Cands[o.CandStart[i]*h.C:o.CandStart[i+1]*h.C])
			for k, c := range o.Cand[i] {
				h.candOff[base+k] = !c.Feasible
			}
		}
	}
	return h, nil
}

// MaskTurns replaces observation b's candidate mask by turn (per agent, the candidates still
// open at its turn: env.MAIFSSample.Turn), as behaviour cloning masks.
func (h *MAIFSHost) MaskTurns(b int, turn [][]bool) {
	for i, m := range turn {
		base := (b*h.N + i) * h.K
		for k, ok := range m {
			h.candOff[base+k] = !ok
		}
	}
}

// Tensors copies the batch to dev, every tensor owned by s.
func (h *MAIFSHost) Tensors(s *Scope, dev gotch.Device) *MAIFSInput {
	b, n, sv, k := int64(h.B), int64(h.N), int64(h.S), int64(h.K)
	own := func(t *ts.Tensor) *ts.Tensor { return s.Own(t) }
	return &MAIFSInput{B: b, N: n, S: sv, K: k,
		Agents:     own(HostTensor(h.agents, []int64{b, n, int64(h.A)}, dev)),
		Servers:    own(HostTensor(h.servers, []int64{b, sv, int64(h.SD)}, dev)),
		Cands:      own(HostTensor(h.cands, []int64{b, n, k, int64(h.C)}, dev)),
		CandOff:    own(HostTensor(h.candOff, []int64{b, n, k}, dev)),
		AgentPad:   own(HostTensor(h.agentPad, []int64{b, n}, dev)),
		ServerPad:  own(HostTensor(h.serverPad, []int64{b, sv}, dev)),
		AgentReal:  own(HostTensor(h.agentReal, []int64{b, n}, dev)),
		AgentCount: own(HostTensor(h.count, []int64{b, 1}, dev)),
	}
}

// MAIFSScorer runs a network as the environment's scorer (env.MAIFSScorer), one observation
// per call, without gradients.
type MAIFSScorer struct {
	Net *MAIFSNet
	Dev gotch.Device
}

// ScoreMAIFS implements env.MAIFSScorer.
func (p MAIFSScorer) ScoreMAIFS(o *env.MAIFSObs) (env.MAIFSScores, error) {
	h, err := NewMAIFSHost(p.Net.Arch, []*env.MAIFSObs{o})
	if err != nil {
		return env.MAIFSScores{}, err
	}
	var logits, order []float32
	NoGrad(func() {
		s := NewScope(p.Dev)
		defer s.Drop()
		out := p.Net.Forward(s, h.Tensors(s, p.Dev))
		logits = HostFloats(out.Logits, nil)
		order = HostFloats(out.Order, nil)
	})
	n := o.NumAgents()
	sc := env.MAIFSScores{Order: order[:n], Logits: make([]float32, 0, o.CandStart[n])}
	for i := range n {
		sc.Logits = append(sc.Logits, logits[i*h.K:i*h.K+len(o.Cand[i])]...)
	}
	return sc, nil
}
