package finetune

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

func TestAdvantages(t *testing.T) {
	const g, l = 0.9, 0.5
	for _, tc := range []struct {
		name          string
		reward, value []float32
		done          []bool
		last          []float32
		envs          int
		want          []float64
	}{
		{
			// One env, no episode end: delta_t = r + g V(t+1) - V(t), A_t = delta_t + g l A_t+1.
			name: "bootstrap", envs: 1,
			reward: []float32{1, 2}, value: []float32{0.5, 1}, done: []bool{false, false}, last: []float32{2},
			want: []float64{
				(1 + g*1 - 0.5) + g*l*(2+g*2-1),
				2 + g*2 - 1,
			},
		},
		{
			// The episode ends at step 0: nothing flows back across it, no bootstrap.
			name: "episode end", envs: 1,
			reward: []float32{1, 2}, value: []float32{0.5, 1}, done: []bool{true, false}, last: []float32{2},
			want: []float64{1 - 0.5, 2 + g*2 - 1},
		},
		{
			// Two envs interleaved step-major: each env's chain is its own.
			name: "two envs", envs: 2,
			reward: []float32{1, 0, 0, 3}, value: []float32{0, 0, 0, 0}, done: []bool{false, false, false, true}, last: []float32{10, 10},
			want: []float64{1 + g*l*(g*10), 0 + g*l*3, g * 10, 3},
		},
	} {
		adv, ret := advantages(tc.reward, tc.value, tc.done, tc.last, tc.envs, g, l)
		for i := range tc.want {
			if math.Abs(float64(adv[i])-tc.want[i]) > 1e-5 {
				t.Errorf("%s: adv[%d] = %v, want %v", tc.name, i, adv[i], tc.want[i])
			}
			if math.Abs(float64(ret[i]-adv[i]-tc.value[i])) > 1e-5 {
				t.Errorf("%s: ret[%d] = %v, want adv + value = %v", tc.name, i, ret[i], adv[i]+tc.value[i])
			}
		}
	}
}

func TestExplainedVariance(t *testing.T) {
	target := []float32{1, 2, 3, 4}
	if ev := explainedVariance(target, target); ev != 1 {
		t.Errorf("perfect critic: %v, want 1", ev)
	}
	if ev := explainedVariance([]float32{2.5, 2.5, 2.5, 2.5}, target); math.Abs(ev) > 1e-12 {
		t.Errorf("constant critic: %v, want 0", ev)
	}
	if ev := explainedVariance(target, []float32{1, 1, 1, 1}); !math.IsNaN(ev) {
		t.Errorf("constant targets: %v, want NaN", ev)
	}
}

// Sampling follows the probabilities and never returns a masked candidate, even one whose
// stored log-probability is large.
func TestSampleActionMasked(t *testing.T) {
	logp := []float32{float32(math.Log(0.25)), 5, float32(math.Log(0.75)), -1e9}
	mask := []bool{true, false, true, false}
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, len(mask))
	const n = 20000
	for range n {
		counts[sampleAction(logp, mask, rng)]++
	}
	if counts[1] != 0 || counts[3] != 0 {
		t.Fatalf("masked candidates sampled: %v", counts)
	}
	if f := float64(counts[0]) / n; math.Abs(f-0.25) > 0.02 {
		t.Errorf("candidate 0 drawn %.3f of the time, want 0.25", f)
	}
}

func TestEpisodesSubsetAndWorkload(t *testing.T) {
	var fc config.FinetuneConfig
	fc.SetDefaults()
	fc.Nodes = filepath.Join(traceDir(), "openb_node_list_gpu_node.csv")
	fc.TracesDir = traceDir()
	fc.ClusterSizes = []int{100, 0}
	eps, err := newEpisodes(fc)
	if err != nil {
		t.Fatal(err)
	}
	full, err := eps.build(Draw{Seed: 49})
	if err != nil {
		t.Fatal(err)
	}
	small, err := eps.build(Draw{Seed: 49, Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	again, err := eps.build(Draw{Seed: 49, Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	if n := small.Cluster().NumNodes(); n != 100 {
		t.Fatalf("sub-cluster has %d nodes, want 100", n)
	}
	if full.Cluster().NumNodes() != len(eps.nodes) {
		t.Fatalf("size 0 has %d nodes, want all %d", full.Cluster().NumNodes(), len(eps.nodes))
	}
	if small.Cluster().Node(50) != again.Cluster().Node(50) || small.Task().Name != again.Task().Name {
		t.Fatal("the same draw built different episodes")
	}
	// The workload is tuned to each cluster's own GPU capacity.
	for _, a := range []struct {
		name string
		n    int
	}{{"full", 0}, {"small", 100}} {
		c, work, err := eps.workload(Draw{Seed: 49, Size: a.n})
		if err != nil {
			t.Fatal(err)
		}
		_, _, capGPU := c.Capacity()
		var total int64
		for _, task := range work {
			total += task.TotalGPUMilli()
		}
		if r := float64(total) / float64(capGPU); r < 1.2 || r > 1.3 {
			t.Errorf("%s: workload asks %.3f x the GPU capacity, want about 1.3", a.name, r)
		}
	}
	if _, err := eps.build(Draw{Trace: 3}); err == nil {
		t.Error("an out-of-range trace index built an episode")
	}
}

// openbEpisode is a default-config training episode on 300 openb nodes.
func openbEpisode(t *testing.T) *env.Arrivals {
	t.Helper()
	var fc config.FinetuneConfig
	fc.SetDefaults()
	fc.Nodes = filepath.Join(traceDir(), "openb_node_list_gpu_node.csv")
	fc.TracesDir = traceDir()
	eps, err := newEpisodes(fc)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := eps.build(Draw{Seed: 7, Size: 300})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// Merging identical node rows changes nothing the policy says: per-node logits and the value
// match the full forward, and a row's probability is the sum over its nodes.
func TestCompactMatchesFullForward(t *testing.T) {
	ep := openbEpisode(t)
	pol := policy{net: pretrainedNet(t), dev: gotch.CPU, temperature: 1}
	pol.net.Arch.TiePrior = 2
	var obs env.Observation
	var rows compactor
	for step := 0; step < 400 && !ep.Done(); step++ {
		ep.Observe(&obs)
		var full, small sample
		full.store(&obs, pol.tieScale())
		rows.compact(&obs, pol.net.Arch.NodeDim, &small, pol.tieScale())
		if step%100 == 0 {
			f, s := evalPolicy(pol, []*sample{&full}), evalPolicy(pol, []*sample{&small})
			if small.obs.NumNodes >= obs.NumNodes {
				t.Fatalf("step %d: %d rows for %d nodes", step, small.obs.NumNodes, obs.NumNodes)
			}
			if math.Abs(float64(f.value[0]-s.value[0])) > 1e-4*math.Max(1, math.Abs(float64(f.value[0]))) {
				t.Fatalf("step %d: value %v full, %v compact", step, f.value[0], s.value[0])
			}
			for r, members := range rows.members {
				var p float64
				for _, i := range members {
					if math.Abs(float64(f.logits[i]-s.logits[r])) > 1e-4 {
						t.Fatalf("step %d node %d: logit %v full, %v as row %d", step, i, f.logits[i], s.logits[r], r)
					}
					p += math.Exp(float64(f.logp[i]))
				}
				if got := math.Exp(float64(s.logp[r])); math.Abs(got-p) > 1e-4 {
					t.Fatalf("step %d row %d: probability %v, nodes sum to %v", step, r, got, p)
				}
			}
		}
		a := slices.Index(obs.Mask, true)
		if _, err := ep.Step(env.Action{Candidate: a}); err != nil {
			t.Fatal(err)
		}
	}
}

// store copies obs into s uncompacted, one row per node, each weighted by its own tie
// preference: the reference for compact.
func (s *sample) store(obs *env.Observation, tieScale float64) {
	o := &s.obs
	o.Stage, o.NumNodes = obs.Stage, obs.NumNodes
	o.Nodes = append(o.Nodes[:0], obs.Nodes...)
	o.Mask = append(o.Mask[:0], obs.Mask...)
	o.Task = append(o.Task[:0], obs.Task...)
	o.Global = append(o.Global[:0], obs.Global...)
	s.count, s.weight = s.count[:0], s.weight[:0]
	for i := range obs.NumNodes {
		s.count = append(s.count, 1)
		s.weight = append(s.weight, float32(tieScale)*obs.TiePref[i])
	}
	s.rows = new(nn.RowIndex)
	s.rows.Reset(len(obs.Nodes) / max(1, obs.NumNodes))
	s.ids = s.rows.Add(o, s.ids[:0])
}

// TestTemperature: the sampled policy is softmax((logits + tie prior) / temperature) over
// nodes, merged rows included, and greedy decisions (the logits) do not depend on the
// temperature.
func TestTemperature(t *testing.T) {
	ep := openbEpisode(t)
	net := pretrainedNet(t)
	net.Arch.TiePrior = 1
	var obs env.Observation
	var rows compactor
	for step := 0; step < 200 && !ep.Done(); step++ {
		ep.Observe(&obs)
		if step%50 == 0 {
			var s sample
			coldPol := policy{net: net, dev: gotch.CPU, temperature: 0.25}
			rows.compact(&obs, net.Arch.NodeDim, &s, coldPol.tieScale())
			hot := evalPolicy(policy{net: net, dev: gotch.CPU, temperature: 1}, []*sample{&s})
			cold := evalPolicy(coldPol, []*sample{&s})
			// Reference: the node-level softmax of (logits + prior) / 0.25, summed over each
			// row's nodes.
			mass := func(r int) float64 {
				var m float64
				for _, i := range rows.members[r] {
					m += math.Exp((float64(hot.logits[r]) + net.Arch.TiePrior*float64(obs.TiePref[i])) / 0.25)
				}
				return m
			}
			var z float64
			for r, ok := range s.obs.Mask {
				if ok {
					z += mass(r)
				}
			}
			for r, ok := range s.obs.Mask {
				if hot.logits[r] != cold.logits[r] {
					t.Fatalf("step %d row %d: logits %v at 1, %v at 0.25", step, r, hot.logits[r], cold.logits[r])
				}
				want := 0.0
				if ok {
					want = mass(r) / z
				}
				if got := math.Exp(float64(cold.logp[r])); math.Abs(got-want) > 1e-4 {
					t.Fatalf("step %d row %d: probability %v at 0.25, want %v", step, r, got, want)
				}
			}
		}
		a := slices.Index(obs.Mask, true)
		if _, err := ep.Step(env.Action{Candidate: a}); err != nil {
			t.Fatal(err)
		}
	}
}

// Staggering leaves copy i of n at least i/n of the way through its episode, by no more
// decisions than that takes, with the decisions recorded for a resume to replay.
func TestStagger(t *testing.T) {
	cfg := smallConfig(t, "none", t.TempDir())
	eps, err := newEpisodes(cfg.Finetune)
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	pl := &pool{eps: eps, slots: make([]*slot, n), workers: 2}
	for i := range pl.slots {
		pl.slots[i] = &slot{}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	if err := pl.startFresh(allSlots(n), rng); err != nil {
		t.Fatal(err)
	}
	pol := policy{net: pretrainedNet(t), dev: gotch.CPU, temperature: 1}
	if err := pl.stagger(pol, rng); err != nil {
		t.Fatal(err)
	}
	for i, s := range pl.slots {
		if got := s.ep.(placementEpisode).Progress(); got < float64(i)/n {
			t.Errorf("copy %d: progress %.3f, want >= %.3f", i, got, float64(i)/n)
		}
		// One decision fewer must not have reached the target: replay all but the last.
		if len(s.actions) > 0 {
			var again slot
			if err := pl.start(&again, s.draw, s.actions[:len(s.actions)-1]); err != nil {
				t.Fatal(err)
			}
			if got := again.ep.(placementEpisode).Progress(); got >= float64(i)/n {
				t.Errorf("copy %d: progress %.3f already one decision earlier", i, got)
			}
		} else if i > 0 {
			t.Errorf("copy %d made no decision", i)
		}
	}
}

// The averaged network starts at the trained weights and then moves 1-avg_decay of the way to
// them after each update; without avg_decay the trained network is the deployed one.
func TestAverage(t *testing.T) {
	cfg := smallConfig(t, "none", t.TempDir())
	cfg.Finetune.AvgDecay = 0.75
	m, err := newModels(cfg, &episodes{}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	if m.deployed().net != m.avg.net {
		t.Fatal("with avg_decay the averaged network is not the deployed one")
	}
	before := flat(m.avg.net)
	if !slices.Equal(before, flat(m.pol.net)) {
		t.Fatal("the averaged network does not start at the trained weights")
	}
	nn.NoGrad(func() {
		for _, p := range m.pol.net.Params() {
			p.Tensor.MustAddScalar_(ts.FloatScalar(1))
		}
	})
	m.average()
	after, trained := flat(m.avg.net), flat(m.pol.net)
	for i := range after {
		if want := 0.75*before[i] + 0.25*trained[i]; math.Abs(after[i]-want) > 1e-6 {
			t.Fatalf("weight %d averaged to %v, want %v", i, after[i], want)
		}
	}
	cfg.Finetune.AvgDecay = 0
	if m, err = newModels(cfg, &episodes{}, gotch.CPU); err != nil {
		t.Fatal(err)
	}
	if m.avg != nil || m.deployed().net != m.pol.net {
		t.Fatal("without avg_decay the deployed network is not the trained one")
	}
}

// flat is every weight of net in Params order.
func flat(net *nn.Net) []float64 {
	var out []float64
	for _, p := range net.Params() {
		out = append(out, p.Tensor.Float64Values(false)...)
	}
	return out
}

// A sampled row goes to its nodes in proportion to exp(scale x tie preference), and the row's
// log mass is the log of that sum.
func TestPickNodeFollowsThePrior(t *testing.T) {
	nodes, pref := []int{3, 0, 5}, []float32{0, 1, 0.5, 0.25, 0, 0}
	const scale = 2
	want := map[int]float64{}
	var total float64
	for _, i := range nodes {
		want[i] = math.Exp(scale * float64(pref[i]))
		total += want[i]
	}
	if got := logMass(nodes, pref, scale, 3); math.Abs(float64(got)-math.Log(total)) > 1e-6 {
		t.Fatalf("log mass %v, want %v", got, math.Log(total))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const draws = 20000
	got := map[int]int{}
	for range draws {
		got[pickNode(nodes, pref, scale, rng)]++
	}
	for _, i := range nodes {
		if p := float64(got[i]) / draws; math.Abs(p-want[i]/total) > 0.01 {
			t.Errorf("node %d drawn %.3f of the time, want %.3f", i, p, want[i]/total)
		}
	}
}
