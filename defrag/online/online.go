// Package online is defragmentation in a running cluster: a defragmenter the timed openb
// world (package tasks) invokes on a trigger, with a migration budget per invocation and a cap
// per hour, planning with a named method on a snapshot of the live cluster, and charging each
// migration downtime. See docs/defrag-online.md.
package online

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/tasks"
)

// Downtime defaults: a migration stops the task for a + b x its GPUs. The order of magnitude
// follows the GPU checkpoint/restore literature: ParallelGPUOS (Huang et al., "PARALLELGPUOS:
// A Concurrent OS-level GPU Checkpoint and Restore System using Validated Speculation", 2024)
// and ByteCheckpoint (Wan et al., NSDI'25) report stop-the-world GPU checkpoint plus restore
// of seconds to tens of seconds, growing with the GPU memory copied. See docs/defrag-online.md.
const (
	DefaultDowntimeBase   = 10.0 // seconds
	DefaultDowntimePerGPU = 20.0 // seconds per GPU of the task's share
)

// Config is the trigger, the budget and the migration cost.
type Config struct {
	// Every is the time between checks (Δt, seconds); HeadWait (T, seconds) is how long the
	// queue head must have waited at a check for the defragmenter to act (0: act at every check).
	Every    float64 `json:"every_s"`
	HeadWait float64 `json:"head_wait_s"`
	// Budget is the most migrations per invocation; CapPerHour the most started in any hour.
	Budget     int `json:"budget"`
	CapPerHour int `json:"cap_per_hour"`
	// DowntimeBase + DowntimePerGPU x GPU share is a migration's downtime (seconds).
	DowntimeBase   float64 `json:"downtime_base_s"`
	DowntimePerGPU float64 `json:"downtime_per_gpu_s"`
}

// DefaultConfig is the probe trigger (every 10 min when the head waited 5 min,
// budget 10) with a cap of 30 an hour and the downtime defaults.
func DefaultConfig() Config {
	return Config{Every: 600, HeadWait: 300, Budget: 10, CapPerHour: 30,
		DowntimeBase: DefaultDowntimeBase, DowntimePerGPU: DefaultDowntimePerGPU}
}

// Validate names the first key out of range.
func (c Config) Validate() error {
	bad := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
	switch {
	case !(c.Every > 0) || bad(c.Every):
		return fmt.Errorf("every_s: must be > 0 seconds, got %v", c.Every)
	case c.HeadWait < 0 || bad(c.HeadWait):
		return fmt.Errorf("head_wait_s: must be >= 0 seconds, got %v", c.HeadWait)
	case c.Budget < 1:
		return fmt.Errorf("budget: must be >= 1 migration per invocation, got %d", c.Budget)
	case c.CapPerHour < 1:
		return fmt.Errorf("cap_per_hour: must be >= 1, got %d", c.CapPerHour)
	case c.DowntimeBase < 0 || bad(c.DowntimeBase):
		return fmt.Errorf("downtime_base_s: must be >= 0, got %v", c.DowntimeBase)
	case c.DowntimePerGPU < 0 || bad(c.DowntimePerGPU):
		return fmt.Errorf("downtime_per_gpu_s: must be >= 0, got %v", c.DowntimePerGPU)
	}
	return nil
}

// Downtime is the downtime of migrating t.
func (c Config) Downtime(t sim.Task) float64 {
	return c.DowntimeBase + c.DowntimePerGPU*float64(t.TotalGPUMilli())/sim.MilliPerGPU
}

// Snapshot is what a method plans on: a copy of the live cluster (tasks in downtime hold
// their target too, as tasks.ReservationName reservations), the waiting tasks oldest first,
// and the placer that will place them.
type Snapshot struct {
	Cluster *sim.Cluster
	Waiting []sim.Task
	Placer  policy.Placer
	// Fixed reports a task that cannot move now (in downtime, or a reservation).
	Fixed func(task string) bool
	// Now is the invocation's time; Queued the GPU-seconds the waiting tasks have queued so
	// far (tasks.View.PendingGPUSeconds).
	Now, Queued float64
}

// Planner proposes at most budget migrations for a snapshot, each feasible when made in order.
type Planner interface {
	Name() string
	Plan(s Snapshot, budget int, rng *rand.Rand) ([]defrag.Migration, error)
}

var planners = map[string]func() Planner{}

func register(name string, f func() Planner) { planners[name] = f }

// Methods lists the method names; "none" (no defragmenter) is the caller's.
func Methods() []string {
	out := make([]string, 0, len(planners))
	for k := range planners {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// NewPlanner returns the named method.
func NewPlanner(name string) (Planner, error) {
	f, ok := planners[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("unknown method %q (valid: none, %s)", name, strings.Join(Methods(), ", "))
	}
	return f(), nil
}

// maxPending bounds the waiting tasks a snapshot carries, as the static defrag states do.
const maxPending = 200

// Defragmenter is the tasks world's hook: it checks the trigger, plans on a snapshot and
// starts the plan's migrations that are feasible on the live cluster when made.
type Defragmenter struct {
	cfg     Config
	planner Planner
	placer  policy.Placer
	rng     *rand.Rand
	started []float64 // times of the migrations started in the last hour
	// Invocations counts the checks that planned; Skipped the planned migrations the live
	// cluster refused (a task in downtime, a target held by a migration still under way).
	Invocations, Skipped int
}

// New returns a defragmenter; its random draws come from seed.
func New(cfg Config, p Planner, placer policy.Placer, seed uint64) (*Defragmenter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Defragmenter{cfg: cfg, planner: p, placer: placer, rng: sim.RNG(seed, streamDefrag)}, nil
}

// streamDefrag is the seeded stream of the methods' random draws.
const streamDefrag uint64 = 23

// Invoke is tasks.Defragmenter's.
func (d *Defragmenter) Invoke(v *tasks.View) (float64, error) {
	now := v.Now()
	next := now + d.cfg.Every
	waiting := v.Waiting()
	if len(waiting) == 0 || now-v.Arrival(waiting[0]).Time < d.cfg.HeadWait {
		return next, nil
	}
	d.started = slices.DeleteFunc(d.started, func(t float64) bool { return t <= now-3600 })
	budget := min(d.cfg.Budget, d.cfg.CapPerHour-len(d.started))
	if budget <= 0 {
		return next, nil
	}
	s := Snapshot{Cluster: v.Cluster().Clone(), Placer: d.placer, Fixed: v.Migrating, Now: now, Queued: v.PendingGPUSeconds()}
	for _, i := range waiting[:min(len(waiting), maxPending)] {
		s.Waiting = append(s.Waiting, v.Arrival(i).Task)
	}
	ms, err := d.planner.Plan(s, budget, d.rng)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", d.planner.Name(), err)
	}
	d.Invocations++
	c := v.Cluster()
	for _, m := range ms[:min(len(ms), budget)] {
		p, ok := c.Placement(m.Task)
		to, okNode := c.NodeIndex(m.ToNode)
		if !ok || !okNode || v.Migrating(m.Task) {
			d.Skipped++
			continue
		}
		if err := v.Migrate(m.Task, sim.Choice{Node: to, GPUs: sim.NewGPUSet(m.ToGPUs...)}, d.cfg.Downtime(p.Task)); err != nil {
			d.Skipped++
			continue
		}
		d.started = append(d.started, now)
	}
	return next, nil
}

// placeElsewhere is the placer's best choice for t on c off node n (ties by the tie order).
func placeElsewhere(c *sim.Cluster, placer policy.Placer, t sim.Task, n int, rng *rand.Rand) (sim.Choice, bool) {
	if ch, ok := placer.Place(c, t, rng); ok && ch.Node != n {
		return ch, true
	}
	var best sim.Choice
	bestScore, found := math.Inf(-1), false
	for _, ch := range c.Candidates(t, nil) {
		if ch.Node == n {
			continue
		}
		sc := placer.Score(c, t, ch)
		if !found || sc > bestScore || sc == bestScore && c.TieRank(ch.Node) < c.TieRank(best.Node) {
			best, bestScore, found = ch, sc, true
		}
	}
	return best, found
}
