package finetune

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/jobs"
)

// maifsRound is the round length of the fungible world's runs (fungible.Run's default, as
// eval --timed fungible's round): every decision point is one round.
const maifsRound = 360.0

// maifsRewardScale divides MAIFS.Reward (job-hours) so that a rollout's returns stay of order
// 1-10 (a round of 50 jobs costs 0.05), the range the fresh critic's output starts in.
const maifsRewardScale = 100.0

// maifsSource is the fungible world of the maifs section and its workloads: the PPO episodes
// (ppo_generate x ppo_seeds) and the held-out check (generate x val_seeds).
type maifsSource struct {
	sec      config.MAIFSConfig
	cluster  fungible.Cluster
	model    fungible.SpeedModel
	opts     env.MAIFSOptions
	train    []fungible.WorkloadConfig
	seeds    []uint64
	val      []fungible.WorkloadConfig
	valSeeds []uint64
	// gamma is the fine-tune's discount, which the shaping term's potential difference uses.
	gamma float64
}

func newMAIFSSource(sec config.MAIFSConfig) (*maifsSource, error) {
	if err := sec.Validate(); err != nil {
		return nil, fmt.Errorf("maifs.%w", err)
	}
	s := &maifsSource{sec: sec, opts: datasets.MAIFSOptionsOf(sec)}
	w, err := fungible.LoadWorld(datasets.MAIFSWorld(sec), "maifs.")
	if err != nil {
		return nil, err
	}
	s.cluster, s.model = w.Cluster, w.Model
	for _, k := range []struct {
		key   string
		specs []string
		dst   *[]fungible.WorkloadConfig
	}{{"ppo_generate", sec.PPOGenerate, &s.train}, {"generate", sec.Generate, &s.val}} {
		for i, spec := range k.specs {
			w, err := fungible.ParseWorkloadSpec(spec)
			if err != nil {
				return nil, fmt.Errorf("maifs.%s[%d]: %w", k.key, i, err)
			}
			*k.dst = append(*k.dst, w)
		}
	}
	if s.seeds, err = config.ParseSeeds(sec.PPOSeeds); err != nil {
		return nil, fmt.Errorf("maifs.ppo_seeds: %w", err)
	}
	if s.valSeeds, err = config.ParseSeeds(sec.ValSeeds); err != nil {
		return nil, fmt.Errorf("maifs.val_seeds: %w", err)
	}
	return s, nil
}

// draw picks the next training episode: a ppo_generate workload (Trace) and a seed.
func (s *maifsSource) draw(rng *rand.Rand) Draw {
	return Draw{Trace: rng.IntN(len(s.train)), Seed: s.seeds[rng.IntN(len(s.seeds))]}
}

// workload generates w at seed.
func (s *maifsSource) workload(w fungible.WorkloadConfig, seed uint64) ([]fungible.Job, error) {
	w.Seed = seed
	return fungible.Generate(s.model.Tput, s.model.Sens.JobTypes(), w)
}

// maifsPoint is what a world hands the trainer: a decision point (the ledger the round starts
// from, the observation, the jobs in the system and each one's work left, env.MAIFS.WorkLeft),
// or the end of its episode.
type maifsPoint struct {
	l    *fungible.Ledger
	obs  *env.MAIFSObs
	jobs int
	left map[int]float64
	end  *fungible.Result
	err  error
}

// errStopped ends a world's run when the trainer closes it.
var errStopped = errors.New("maifs episode stopped")

// maifsWorld is one environment copy: an episode of the fungible world running on its own
// goroutine, whose round policy hands every decision point to the trainer and waits for its
// plan. The trainer decides on the ledger the world is blocked on, so the two never touch it
// at once.
type maifsWorld struct {
	e      *env.MAIFS
	draw   Draw
	points chan maifsPoint
	plans  chan fungible.Plan
	cur    maifsPoint
	// moves are the applied decisions of every decision point so far, encoded for a
	// checkpoint (appendMoves), and ret the episode's (scaled) return so far.
	moves []int32
	ret   float64
	// shaping and gamma weigh and discount the reward's shaping term (maifs.shaping).
	shaping, gamma float64
}

// Plan implements fungible.RoundPolicy on the world's goroutine.
func (w *maifsWorld) Plan(l *fungible.Ledger, _ fungible.SpeedModel, s fungible.RoundState) (fungible.Plan, error) {
	o, err := w.e.Observe(l, s)
	if err != nil {
		return fungible.Plan{}, err
	}
	left := make(map[int]float64, len(s.Present))
	for _, st := range s.Present {
		left[st.ID] = w.e.WorkLeft(st)
	}
	w.points <- maifsPoint{l: l, obs: o, jobs: len(s.Present), left: left}
	plan, ok := <-w.plans
	if !ok {
		return fungible.Plan{}, errStopped
	}
	return plan, nil
}

// start runs the episode d names up to its first decision point, then replays moves (a
// checkpoint's, appendMoves' encoding) so that the world stands where the checkpointed one did.
func (s *maifsSource) start(d Draw, moves []int32) (*maifsWorld, error) {
	if d.Trace < 0 || d.Trace >= len(s.train) {
		return nil, fmt.Errorf("maifs episode workload index %d out of range (%d in maifs.ppo_generate)", d.Trace, len(s.train))
	}
	work, err := s.workload(s.train[d.Trace], d.Seed)
	if err != nil {
		return nil, fmt.Errorf("maifs.ppo_generate[%d] seed %d: %w", d.Trace, d.Seed, err)
	}
	return s.run(d, work, moves)
}

func (s *maifsSource) run(d Draw, work []fungible.Job, moves []int32) (*maifsWorld, error) {
	e, err := env.NewMAIFS(s.cluster, s.model, s.opts)
	if err != nil {
		return nil, err
	}
	order, err := jobs.NewPolicy("fifo")
	if err != nil {
		return nil, err
	}
	w := &maifsWorld{e: e, draw: d, points: make(chan maifsPoint, 1), plans: make(chan fungible.Plan), shaping: s.sec.Shaping, gamma: s.gamma}
	go func() {
		res, err := fungible.Run(s.cluster, s.model, work, fungible.RunConfig{Policy: w, Order: order, Round: maifsRound})
		w.points <- maifsPoint{end: &res, err: err}
	}()
	if err := w.next(); err != nil {
		return nil, err
	}
	for at := 0; at < len(moves); {
		n := int(moves[at])
		if at+1+2*n > len(moves) || w.cur.end != nil {
			w.close()
			return nil, fmt.Errorf("maifs episode %+v: replayed moves do not match the episode", d)
		}
		pairs := moves[at+1 : at+1+2*n]
		at += 1 + 2*n
		if err := w.replay(pairs); err != nil {
			w.close()
			return nil, fmt.Errorf("maifs episode %+v: %w", d, err)
		}
	}
	return w, nil
}

// next waits for the world's next decision point or the end of its episode.
func (w *maifsWorld) next() error {
	w.cur = <-w.points
	if w.cur.err != nil {
		return fmt.Errorf("maifs episode %+v: %w", w.draw, w.cur.err)
	}
	return nil
}

// act hands the plan of the current decision point to the world, whose applied moves were
// pairs (agent, candidate), and waits for the next point; it returns the point's reward:
// MAIFS.Reward plus, weighed by shaping, the potential difference γΦ(s') − Φ(s), where Φ is
// minus the work left to the jobs of s (in hours at their reference speeds). Φ(s') counts the
// jobs of s only: a job arriving during the round is no consequence of the round's decisions,
// and leaving its work out takes a large, action-independent jump out of the advantage.
func (w *maifsWorld) act(plan fungible.Plan, pairs []int32) (float64, error) {
	r := w.e.Reward(w.cur.jobs, maifsRound)
	before := w.cur.left
	w.moves = append(append(w.moves, int32(len(pairs)/2)), pairs...)
	w.plans <- plan
	if err := w.next(); err != nil {
		return 0, err
	}
	if w.shaping > 0 {
		r += w.shaping * potentialDiff(before, w.cur.left, w.gamma)
	}
	r /= maifsRewardScale
	w.ret += r
	return r, nil
}

// potentialDiff is γΦ(s') − Φ(s) with Φ minus the work left (hours) to the jobs of s: before
// holds each one's at s, after at s' (a job missing from after has finished; jobs only in
// after arrived during the round and are not counted).
func potentialDiff(before, after map[int]float64, gamma float64) float64 {
	var was, now float64
	for id, h := range before {
		was += h
		now += after[id]
	}
	return was - gamma*now
}

// replay applies recorded moves at the current decision point: those agents first, in their
// order, each taking its recorded candidate, every other agent waiting.
func (w *maifsWorld) replay(pairs []int32) error {
	n := w.cur.obs.NumAgents()
	order := make([]float32, n)
	want := make(map[int]int, len(pairs)/2)
	for i := range order {
		order[i] = -1
	}
	for p := 0; p < len(pairs); p += 2 {
		i := int(pairs[p])
		if i < 0 || i >= n {
			return fmt.Errorf("recorded agent %d of %d", i, n)
		}
		order[i], want[i] = float32(len(pairs)-p), int(pairs[p+1])
	}
	plan, got, err := decide(w.e, w.cur, order, func(i int, _ []bool) int { return want[i] })
	if err != nil {
		return err
	}
	if len(got) != len(pairs) {
		return fmt.Errorf("replayed %d moves, recorded %d", len(got)/2, len(pairs)/2)
	}
	_, err = w.act(plan, got)
	return err
}

// decide decodes the current decision point with choose (env.MAIFS.DecodeTurns) and returns
// the plan and its applied moves as (agent, candidate) pairs in the order they were taken.
func decide(e *env.MAIFS, p maifsPoint, order []float32, choose func(i int, open []bool) int) (fungible.Plan, []int32, error) {
	var pairs []int32
	plan, _, _, err := e.DecodeTurns(p.l, p.obs, order, func(i int, open []bool) int {
		k := choose(i, open)
		if k > 0 && k < len(open) && open[k] {
			pairs = append(pairs, int32(i), int32(k))
		}
		return k
	})
	return plan, pairs, err
}

// close stops the world's run and waits for its goroutine to finish.
func (w *maifsWorld) close() {
	if w.cur.end != nil {
		return
	}
	close(w.plans)
	for p := range w.points {
		if p.end != nil || p.err != nil {
			return
		}
	}
}

// bestOpen is the open candidate of the highest logit (the first of equals), what greedy
// decoding takes.
func bestOpen(logits []float32, open []bool) int {
	best := -1
	for k, ok := range open {
		if ok && (best < 0 || logits[k] > logits[best]) {
			best = k
		}
	}
	return best
}

// sampleOpen draws a candidate from the softmax of logits/temperature over the open ones and
// returns it with its log-probability.
func sampleOpen(logits []float32, open []bool, temperature float64, rng *rand.Rand) (int, float32) {
	top := math.Inf(-1)
	for k, ok := range open {
		if ok {
			top = max(top, float64(logits[k])/temperature)
		}
	}
	sum := 0.0
	for k, ok := range open {
		if ok {
			sum += math.Exp(float64(logits[k])/temperature - top)
		}
	}
	u, last := rng.Float64()*sum, -1
	for k, ok := range open {
		if !ok {
			continue
		}
		last = k
		if u -= math.Exp(float64(logits[k])/temperature - top); u <= 0 {
			break
		}
	}
	return last, float32(float64(logits[last])/temperature - top - math.Log(sum))
}
