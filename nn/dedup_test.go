package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/sim/simtest"
)

func TestNodeRowsMerge(t *testing.T) {
	a := testArch(t)
	rng := rand.New(rand.NewPCG(1, 2))
	obs := randomObs(a, 40, rng)
	// nodes 10..19 copy node 0's features; 15..19 differ from it in feasibility only
	for i := 10; i < 20; i++ {
		copy(obs.Nodes[i*a.NodeDim:(i+1)*a.NodeDim], obs.Nodes[:a.NodeDim])
		obs.Mask[i] = i < 15
	}
	obs.Mask[0] = true
	var rows NodeRows
	var merged env.Observation
	for range 2 { // the second merge reuses the buffers and must give the same rows
		rows.Merge(obs, a.NodeDim, &merged)
		if merged.NumNodes != 40-10+1 || len(rows.Count) != merged.NumNodes || len(rows.Of) != 40 {
			t.Fatalf("%d rows, %d counts, %d nodes mapped; want 31, 31, 40", merged.NumNodes, len(rows.Count), len(rows.Of))
		}
		if rows.Count[0] != 6 || rows.Count[rows.Of[15]] != 5 || rows.Of[15] == rows.Of[0] {
			t.Fatalf("counts: node 0's row %v, node 15's row %v (row %d vs %d)", rows.Count[0], rows.Count[rows.Of[15]], rows.Of[15], rows.Of[0])
		}
		for i := range obs.NumNodes {
			r := int(rows.Of[i])
			for f := range a.NodeDim {
				if merged.Nodes[r*a.NodeDim+f] != obs.Nodes[i*a.NodeDim+f] || merged.Mask[r] != obs.Mask[i] {
					t.Fatalf("node %d: row %d is not its features and feasibility", i, r)
				}
			}
		}
	}
	if allocs := testing.AllocsPerRun(10, func() { rows.Merge(obs, a.NodeDim, &merged) }); allocs != 0 {
		t.Errorf("Merge allocates %v times after warm-up", allocs)
	}
}

// checkedPlacer runs a checkpoint placer through an episode and, every 25th placed task,
// compares its per-node scores with Forward over every node (and Forward over merged rows,
// the path of non-CPU devices) on the same observation.
type checkedPlacer struct {
	*placer
	t                   *testing.T
	decisions, rowSum   int
	checked, nearTies   int
	fullNodes, maxError float64
}

func (c *checkedPlacer) Place(cl *sim.Cluster, task sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	ch, ok := c.placer.Place(cl, task, rng)
	if !ok {
		return ch, ok
	}
	c.decisions++
	c.rowSum += c.merged.NumNodes
	if c.decisions%25 != 1 {
		return ch, ok
	}
	c.checked++
	obs, net := &c.obs, c.p.Net
	full, _ := forward(c.t, net, obs.NumNodes, obs)
	full[0] = net.Arch.WithTiePrior(full[0], obs.TiePref)
	var viaForward []float32
	NoGrad(func() {
		in := c.rows.Input(&c.merged, net.Arch.NodeDim, gotch.CPU)
		out := net.Forward(in)
		in.Drop()
		viaForward = net.Arch.WithTiePrior(c.rows.Expand(HostFloats(out.Logits, nil), nil), obs.TiePref)
		out.Drop()
	})
	for i, feasible := range obs.Mask {
		if !feasible {
			continue
		}
		tol := 1e-4 * math.Max(1, math.Abs(float64(full[0][i])))
		for _, got := range []float32{c.nodeLogit[i], viaForward[i]} {
			d := math.Abs(float64(got - full[0][i]))
			c.maxError = math.Max(c.maxError, d)
			if d > tol {
				c.t.Fatalf("decision %d node %d: score %v merged, %v over all nodes", c.decisions, i, got, full[0][i])
			}
		}
	}
	want, got := argmaxFeasible(full[0], obs.Mask, nil), argmaxFeasible(c.nodeLogit, obs.Mask, nil)
	if want != got {
		if math.Abs(float64(full[0][want]-full[0][got])) > 1e-5 {
			c.t.Fatalf("decision %d: merged picks node %d (%v), all nodes pick %d (%v)", c.decisions, got, full[0][got], want, full[0][want])
		}
		c.nearTies++
	}
	return ch, ok
}

// randomPlacementNet is a freshly initialised (seed 3) placement network choosing from
// candidates.
func randomPlacementNet(t *testing.T, candidates string) *Net {
	t.Helper()
	spec, _ := env.SpecOf(env.PlacementName)
	var nc config.NetworkConfig
	nc.SetDefaults()
	Seed(3)
	arch := NewArch(spec, nc, 50)
	arch.Candidates = candidates
	net, err := NewNet(arch, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return net
}

// The placer's merged-row inference is the same policy as the network over every node, on
// the states of a real episode (openb default trace, full 1213-node cluster).
func TestPlacerMergedMatchesFullForward(t *testing.T) {
	p := simtest.Openb(t, "default", 1.3, 50)
	net := randomPlacementNet(t, "")
	net.Arch.TiePrior = 1
	pol := &Policy{Net: net, name: "test", dev: gotch.CPU}
	cp := &checkedPlacer{placer: pol.NewPlacer().(*placer), t: t}
	if _, _, err := p.Run(cp, nil); err != nil {
		t.Fatal(err)
	}
	if cp.checked < 100 {
		t.Fatalf("only %d decisions checked", cp.checked)
	}
	perDecision := float64(cp.rowSum) / float64(cp.decisions)
	if perDecision > 0.75*float64(len(p.Nodes)) { // random weights spread tasks; FGD-like policies leave ~137
		t.Errorf("%.0f rows per decision for %d nodes: merging hardly merges", perDecision, len(p.Nodes))
	}
	t.Logf("%d decisions, %.1f rows each (of %d nodes); %d checked, largest score difference %.2g, %d near-ties picked differently",
		cp.decisions, perDecision, len(p.Nodes), cp.checked, cp.maxError, cp.nearTies)
}

// RowIndex numbers equal rows alike across observations (and within one), keeps its ids
// through growth, and a batch built from one or more indexes scores each observation as a
// batch of its own.
func TestRowIndex(t *testing.T) {
	net := testNet(t, 5)
	a, d := net.Arch, net.Arch.NodeDim
	rng := rand.New(rand.NewPCG(3, 4))
	first, second := randomObs(a, 30, rng), randomObs(a, 35, rng)
	copy(second.Nodes, first.Nodes[:10*d])                 // second's nodes 0..9 are first's
	copy(second.Nodes[34*d:35*d], second.Nodes[12*d:13*d]) // and node 34 repeats its node 12

	var x RowIndex
	x.Reset(d)
	idsFirst := x.Add(first, nil)
	idsSecond := x.Add(second, nil)
	for i, id := range idsFirst {
		if id != int32(i) {
			t.Fatalf("first observation: node %d has id %d", i, id)
		}
	}
	for i := range 10 {
		if idsSecond[i] != int32(i) {
			t.Fatalf("second observation: node %d (first's node %d) has id %d", i, i, idsSecond[i])
		}
	}
	if idsSecond[34] != idsSecond[12] || x.Len() != 30+24 {
		t.Fatalf("ids %d and %d for equal rows, %d rows in all; want equal ids and 54 rows", idsSecond[34], idsSecond[12], x.Len())
	}

	// Growth past the initial table keeps every id.
	var many RowIndex
	many.Reset(d)
	big := randomObs(a, 5000, rng)
	ids := many.Add(big, nil)
	again := many.Add(big, nil)
	for i := range ids {
		if ids[i] != int32(i) || again[i] != ids[i] {
			t.Fatalf("node %d: id %d, then %d", i, ids[i], again[i])
		}
	}

	ones := func(n int) []float32 {
		c := make([]float32, n)
		for i := range c {
			c[i] = 1
		}
		return c
	}
	// A third observation numbered by another index shares the batch.
	var y RowIndex
	y.Reset(d)
	third := randomObs(a, 12, rng)
	copy(third.Nodes, first.Nodes[:d]) // the same features as a row of x: sent once per index
	batch := []Observation{
		{Rows: &x, IDs: idsFirst, Mask: first.Mask, Count: ones(30), Task: first.Task, Global: first.Global},
		{Rows: &x, IDs: idsSecond, Mask: second.Mask, Count: ones(35), Task: second.Task, Global: second.Global},
		{Rows: &y, IDs: y.Add(third, nil), Mask: third.Mask, Count: ones(12), Task: third.Task, Global: third.Global},
	}
	var logits, values []float32
	var rows, width int
	NoGrad(func() {
		in := BatchInput(batch, gotch.CPU)
		rows, width = int(in.Rows.MustSize()[0]), int(in.Mask.MustSize()[1])
		if pooled := in.Pool.MustSize()[0]; pooled != 30+35+12 {
			t.Errorf("%d candidates pooled, want 77 (padding is not a candidate)", pooled)
		}
		out := net.Forward(in)
		in.Drop()
		logits, values = HostFloats(out.Logits, nil), HostFloats(out.Value, nil)
		out.Drop()
	})
	if rows != 54+12 || width != 35 {
		t.Fatalf("batch of %d rows, width %d; want 66 and 35", rows, width)
	}
	for j, o := range []*env.Observation{first, second, third} {
		alone, v := forward(t, net, o.NumNodes, o)
		if d := math.Abs(float64(v[0] - values[j])); d > 1e-4 {
			t.Errorf("observation %d: value %v in the batch, %v alone", j, values[j], v[0])
		}
		for i := range o.NumNodes {
			if d := math.Abs(float64(alone[0][i] - logits[j*width+i])); d > 1e-4 {
				t.Errorf("observation %d node %d: logit %v in the batch, %v alone", j, i, logits[j*width+i], alone[0][i])
			}
		}
	}
}
