package tasks

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// Lookahead is a clairvoyant placement ceiling for this world (`--placer lookahead:K,H`): it
// knows every arrival's time, request and run time, and every running task's finish. For each
// task it takes the K best choices by FGD's score (ties by the tie order, as FGD breaks them)
// and, for each, rolls the world forward H seconds on a copy of the cluster: running tasks end
// at their finish, the waiting tasks and the arrivals within H are placed with FGD in arrival
// order whenever they fit (backfill, no reservation). It picks the choice whose rollout has
// the lowest time-averaged fragmentation rate over [now, now+H] (the measure of
// Result.FragRatioMeanPct), FGD's rank breaking ties, so lookahead:1,H is FGD. It draws
// nothing at random: it is deterministic given the world, whatever the seed.
//
// It is a bound, not a scheduler: nothing outside a simulator knows the future. The rollout is
// FGD's and simplifies the world (a migrating task's reservation is held to the task's finish),
// so a larger K or H is not guaranteed to be lower.
type Lookahead struct {
	K int
	H float64

	w        *world
	index    map[string]int // task name -> arrival index
	oldest   int            // no arrival before it waits
	roll     policy.FGD
	cands    []lookCand
	nodes    []int
	waiting  []int
	finishes finishHeap
}

type lookCand struct {
	ch    sim.Choice
	score float64
	rank  int
}

// LookaheadPrefix names the clairvoyant placer: lookahead:K,H.
const LookaheadPrefix = "lookahead:"

// maxLookaheadK and maxLookaheadH bound the rollout's cost per decision.
const (
	maxLookaheadK = 64
	maxLookaheadH = 86400
)

// ParseLookahead parses "lookahead:K,H" (K candidates, horizon H seconds).
func ParseLookahead(spec string) (*Lookahead, error) {
	arg, ok := strings.CutPrefix(strings.ToLower(spec), LookaheadPrefix)
	if !ok {
		return nil, fmt.Errorf("placer %q: want %sK,H", spec, LookaheadPrefix)
	}
	ks, hs, ok := strings.Cut(arg, ",")
	k, errK := strconv.Atoi(ks)
	h, errH := strconv.ParseFloat(hs, 64)
	if !ok || errK != nil || errH != nil || k < 1 || k > maxLookaheadK || !(h > 0 && h <= maxLookaheadH) {
		return nil, fmt.Errorf("placer %q: want %sK,H with K candidates in [1, %d] and horizon H seconds in (0, %d]", spec, LookaheadPrefix, maxLookaheadK, maxLookaheadH)
	}
	return &Lookahead{K: k, H: h}, nil
}

// NewPlacer returns the named placer: lookahead:K,H, or one of package policy's.
func NewPlacer(name string) (policy.Placer, error) {
	if strings.HasPrefix(strings.ToLower(name), LookaheadPrefix) {
		return ParseLookahead(name)
	}
	return policy.NewPlacer(name)
}

// PlacerNames lists the placers NewPlacer knows, lookahead's form included.
func PlacerNames() []string { return append(policy.Placers(), LookaheadPrefix+"K,H") }

func (l *Lookahead) Name() string { return fmt.Sprintf("%s%d,%g", LookaheadPrefix, l.K, l.H) }

// Score is FGD's score: what a defragmenter asking this placer for a migration target ranks by.
func (l *Lookahead) Score(c *sim.Cluster, t sim.Task, ch sim.Choice) float64 {
	return sim.FGDScore(c.FragDelta(t, ch))
}

// bind gives the placer the world it runs in (Run calls it).
func (l *Lookahead) bind(w *world) {
	l.w, l.oldest = w, 0
	l.index = make(map[string]int, len(w.res.Arrivals))
	for i, a := range w.res.Arrivals {
		l.index[a.Task.Name] = i
	}
}

// Place picks among FGD's K best choices by rollout. Outside its world's live cluster (a
// defragmenter planning on a copy) it is FGD.
func (l *Lookahead) Place(c *sim.Cluster, t sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	l.cands = l.cands[:0]
	l.nodes = c.FeasibleNodes(t, l.nodes[:0])
	for _, i := range l.nodes {
		gpus, delta, ok := c.LeastFragmentingGPUs(t, i, negFGDScore)
		if ok {
			l.cands = append(l.cands, lookCand{ch: sim.Choice{Node: i, GPUs: gpus}, score: sim.FGDScore(delta), rank: c.TieRank(i)})
		}
	}
	if len(l.cands) == 0 {
		return sim.Choice{}, false
	}
	slices.SortFunc(l.cands, func(a, b lookCand) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.rank, b.rank))
	})
	ti, known := l.index[t.Name]
	if len(l.cands) == 1 || l.K == 1 || l.w == nil || c != l.w.c || !known {
		return l.cands[0].ch, true
	}
	cands := l.cands[:min(l.K, len(l.cands))]
	now := l.w.last
	sc := c.Clone()
	l.setup(now, ti)
	best, bestRate := 0, math.Inf(1)
	for k, cd := range cands {
		snap := sc.Snapshot()
		rate := l.rollout(sc, now, t, ti, cd.ch)
		if err := sc.Restore(snap); err != nil {
			panic(err) // a snapshot of the rollout's own copy, just taken
		}
		sc.Discard(snap)
		if rate < bestRate-1e-9 {
			best, bestRate = k, rate
		}
	}
	return cands[best].ch, true
}

// negFGDScore ranks a fragment change by FGD's score, best first.
func negFGDScore(delta float64) float64 { return -sim.FGDScore(delta) }

// setup collects the tasks waiting at now other than task ti, oldest first.
func (l *Lookahead) setup(now float64, ti int) {
	arr, fin := l.w.res.Arrivals, l.w.res.Finish
	for l.oldest < len(arr) && arr[l.oldest].Time <= now && fin[l.oldest] != 0 {
		l.oldest++
	}
	l.waiting = l.waiting[:0]
	for i := l.oldest; i < len(arr) && arr[i].Time <= now; i++ {
		if fin[i] == 0 && i != ti { // 0: not started (a started task's finish is after 0, a rejected one's NaN)
			l.waiting = append(l.waiting, i)
		}
	}
}

// rollout places t at ch on c and returns the time-averaged fragmentation rate (percent) over
// [now, now+H] of the world rolled forward with FGD.
func (l *Lookahead) rollout(c *sim.Cluster, now float64, t sim.Task, ti int, ch sim.Choice) float64 {
	arr := l.w.res.Arrivals
	end := now + l.H
	_, _, capMilli := c.Capacity()
	capGPU := float64(capMilli)
	l.finishes = l.finishes[:0]
	for _, p := range c.Placements() {
		name, _ := strings.CutSuffix(p.Task.Name, ReservationName(""))
		if i, ok := l.index[name]; ok && l.w.res.Finish[i] <= end {
			l.finishes = append(l.finishes, finishAt{l.w.res.Finish[i], p.Task.Name})
		}
	}
	heap.Init(&l.finishes)
	if err := c.Place(t, ch); err != nil {
		panic(err) // ch is a feasible choice of this state
	}
	if f := now + arr[ti].RunTime; f <= end {
		heap.Push(&l.finishes, finishAt{f, t.Name})
	}
	waiting := append(l.waiting[:0:0], l.waiting...)
	next := ti + 1
	for next < len(arr) && arr[next].Time <= now {
		next++
	}
	pass := func(at float64, from int) {
		k := from
		for _, i := range waiting[from:] {
			a := arr[i]
			if pc, ok := l.roll.Place(c, a.Task, nil); ok && c.Place(a.Task, pc) == nil {
				if f := at + a.RunTime; f <= end {
					heap.Push(&l.finishes, finishAt{f, a.Task.Name})
				}
				continue
			}
			waiting[k] = i
			k++
		}
		waiting = waiting[:k]
	}
	pass(now, 0)
	var integral float64
	at := now
	for at < end {
		te := end
		if len(l.finishes) > 0 {
			te = min(te, l.finishes[0].t)
		}
		if next < len(arr) {
			te = min(te, arr[next].Time)
		}
		_, _, used := c.Used()
		if idle := capGPU - float64(used); idle > 0 {
			integral += 100 * c.ClusterFrag() / idle * (te - at)
		}
		at = te
		if at >= end {
			break
		}
		freed := false
		for len(l.finishes) > 0 && l.finishes[0].t <= at {
			f := heap.Pop(&l.finishes).(finishAt)
			if _, err := c.Remove(f.name); err == nil {
				freed = true
			}
		}
		from := len(waiting)
		if freed {
			from = 0
		}
		for next < len(arr) && arr[next].Time <= at {
			waiting = append(waiting, next)
			next++
		}
		pass(at, from)
	}
	return integral / l.H
}

type finishAt struct {
	t    float64
	name string
}

// finishHeap orders finishes by time, then name, so the rollout is deterministic.
type finishHeap []finishAt

func (h finishHeap) Len() int { return len(h) }
func (h finishHeap) Less(i, j int) bool {
	return h[i].t < h[j].t || h[i].t == h[j].t && h[i].name < h[j].name
}
func (h finishHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *finishHeap) Push(x any)   { *h = append(*h, x.(finishAt)) }
func (h *finishHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
