package finetune

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/jobs"
	"github.com/schedrl/schedrl/nn"
)

// The maifs family's PPO: multi-agent, in the fungible world.
func init() {
	Register(env.MAIFSName, onLoop(func(cfg config.Config, o Options) (loop, error) { return newMAIFSTrainer(cfg, o) }))
}

// Multi-agent PPO (MAPPO) of the MAIFS policy (finetune.env: maifs, docs/maifs.md): the
// agents of a decision point are the jobs of its window; they share the actor's weights and
// are scored in one forward pass; the centralised critic values the decision point. Agents
// decide in the order head's greedy order (the cloned SRTF-like order; PPO does not train it),
// each sampling a candidate from its tempered softmax over the candidates open at its turn (what
// the agents before it left, env.MAIFS.DecodeTurns). The update weighs every deciding agent's
// clipped ratio with its decision point's shared advantage:
//
//	loss = L_clip - ent_coef H + vf_coef L_V + kl KL(π_clone ‖ π),
//
// L_clip, H and KL averaged over the agents with more than one open candidate, each under its
// own turn's mask. The reward is MAIFS.Reward / maifsRewardScale per round.

// maifsSample is one decision point of a rollout.
type maifsSample struct {
	obs    *env.MAIFSObs
	open   [][]bool  // per agent, its candidates open at its turn
	action []int     // per agent, the candidate it sampled
	greedy []int     // per agent, its most probable open candidate
	logp   []float32 // per agent, the log-probability it had
	value  float32
	reward float32
	done   bool
}

// maifsHeld is a held-out check: greedy decoding (the deployed decoder) on the maifs.generate
// workloads at maifs.val_seeds, one run each.
type maifsHeld struct {
	AvgJCTHours   []float64 `json:"avg_jct_h"`
	MakespanHours []float64 `json:"makespan_h"`
	AvgJCT        float64   `json:"mean_avg_jct_h"`
	Makespan      float64   `json:"mean_makespan_h"`
	// Cost is the reward's per-job cost averaged over the runs (avg JCT + makespan_weight x
	// makespan / jobs, hours): heldOut.Mean is minus it, so the best network has the lowest.
	Cost float64 `json:"cost_h"`
}

// maifsTrainer is a maifs run in progress.
type maifsTrainer struct {
	cfg    config.Config
	fc     config.FinetuneConfig
	src    *maifsSource
	dev    gotch.Device
	net    *nn.MAIFSNet
	ref    *nn.MAIFSNet // the clone: the KL term pulls towards it, kl_pretrained measures the distance
	parent string
	opt    *nn.Adam
	worlds []*maifsWorld

	clock
	pcg     *rand.PCG
	rng     *rand.Rand
	samples []maifsSample
	last    []float32 // each world's value after the rollout
	ended   []episodeEnd
	res     Result
}

func newMAIFSTrainer(cfg config.Config, o Options) (*maifsTrainer, error) {
	fc := cfg.Finetune
	t := &maifsTrainer{cfg: cfg, fc: fc, clock: clock{log: o.Log, perUpdate: fc.NumEnvs * fc.RolloutSteps}, res: Result{Dir: fc.Out}}
	if t.log == nil {
		t.log = slog.Default()
	}
	t.updates = fc.TotalSteps / t.perUpdate
	if strings.EqualFold(fc.From, "none") {
		return nil, fmt.Errorf("finetune.from: env maifs starts from a maifs-bc checkpoint, got none")
	}
	if fc.AvgDecay != 0 {
		return nil, fmt.Errorf("finetune.avg_decay: env maifs trains without weight averaging, got %g", fc.AvgDecay)
	}
	var err error
	if t.dev, err = nn.Device(cfg.Device); err != nil {
		return nil, err
	}
	if t.src, err = newMAIFSSource(cfg.MAIFS); err != nil {
		return nil, err
	}
	t.src.gamma = fc.Gamma
	net, man, err := nn.LoadMAIFS(fc.From, t.dev)
	if err != nil {
		return nil, fmt.Errorf("finetune.from: %w", err)
	}
	// The makespan weight only prices the reward, so the fine-tune may set its own; every other
	// option shapes the observation or the candidates and must be the clone's.
	cloned := net.Arch.Options
	cloned.MakespanWeight = t.src.opts.MakespanWeight
	if cloned != t.src.opts {
		return nil, fmt.Errorf("finetune.from: %s was cloned with environment options %+v, the maifs section has %+v", fc.From, net.Arch.Options, t.src.opts)
	}
	net.Arch.Options = t.src.opts
	t.net, t.parent = net, man.Digest()
	// The clone is loaded even at kl_coef 0: the record's kl_pretrained says how far the
	// policy moved from it either way.
	if t.ref, _, err = nn.LoadMAIFS(fc.From, t.dev); err != nil {
		return nil, fmt.Errorf("finetune.from: %w", err)
	}
	t.opt = nn.NewAdam(t.net.Params(), nn.AdamConfig{Beta1: 0.9, Beta2: 0.999, Eps: fc.AdamEps})
	if err := t.resume(); err != nil {
		t.closeWorlds()
		return nil, err
	}
	t.res.Resumed = t.st.Update > 0
	t.rng = rand.New(t.pcg)
	return t, nil
}

// resume continues from the run directory's newest checkpoint: weights, Adam, the PCG, and
// every world replayed to where it stood; without one it starts fresh episodes.
func (t *maifsTrainer) resume() error {
	dir, err := latestCheckpoint(t.fc.Out)
	if err != nil {
		return err
	}
	if dir == "" {
		if t.rec, err = openRecord(t.fc.Out, 0); err != nil {
			return err
		}
		t.pcg = rand.NewPCG(uint64(t.cfg.Seed), 0x6d61_6966_735f_7070) // stream "maifs_pp"
		rng := rand.New(t.pcg)
		for range t.fc.NumEnvs {
			w, err := t.src.start(t.src.draw(rng), nil)
			if err != nil {
				return err
			}
			t.worlds = append(t.worlds, w)
		}
		return nil
	}
	if err := readState(dir, &t.st); err != nil {
		return err
	}
	if len(t.st.Slots) != t.fc.NumEnvs {
		return fmt.Errorf("%s: %d environment copies, finetune.num_envs is %d", dir, len(t.st.Slots), t.fc.NumEnvs)
	}
	t.pcg = &rand.PCG{}
	if err := t.pcg.UnmarshalBinary(t.st.RNG); err != nil {
		return fmt.Errorf("%s: field rng: %w", filepath.Join(dir, stateFile), err)
	}
	if err := t.net.VS.Load(filepath.Join(dir, checkpoint.ModelFile)); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if err := restoreAdam(dir, t.opt, t.dev); err != nil {
		return err
	}
	for _, s := range t.st.Slots {
		w, err := t.src.start(s.Draw, s.Actions)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		t.worlds = append(t.worlds, w)
	}
	t.rec, err = openRecord(t.fc.Out, t.st.Update)
	return err
}

// begin checks the start network once per run.
func (t *maifsTrainer) begin() error {
	if len(t.st.Evals) == 0 {
		h, err := t.evaluateAndKeepBest()
		if err != nil {
			return err
		}
		t.log.Info("finetune maifs held-out start", "avg_jct_h", h.MAIFS.AvgJCT, "makespan_h", h.MAIFS.Makespan, "seeds", t.cfg.MAIFS.ValSeeds)
	}
	t.res.Start = t.st.Evals[0].Held
	return nil
}

func (t *maifsTrainer) haveRef() bool { return t.ref != nil }

func (t *maifsTrainer) note(line *record) {
	line.setEpisodes(t.ended)
	line.DecidingAgents, line.OffGreedy = t.exploration()
}

// rollout steps every world rollout_steps decision points: one batched forward over the
// worlds' observations, then each world's agents sample along its decision order.
func (t *maifsTrainer) rollout() error {
	n := len(t.worlds)
	t.samples, t.ended = make([]maifsSample, t.perUpdate), t.ended[:0]
	for step := range t.fc.RolloutSteps {
		out, err := t.score(t.currentObs())
		if err != nil {
			return err
		}
		for e, w := range t.worlds {
			s := &t.samples[step*n+e]
			s.obs, s.value = w.cur.obs, out.value[e]
			na := s.obs.NumAgents()
			s.open, s.action, s.logp, s.greedy = make([][]bool, na), make([]int, na), make([]float32, na), make([]int, na)
			plan, pairs, err := decide(w.e, w.cur, out.order[e], func(i int, open []bool) int {
				k, lp := sampleOpen(out.logits[e][i], open, t.fc.Temperature, t.rng)
				s.open[i], s.action[i], s.logp[i], s.greedy[i] = open, k, lp, bestOpen(out.logits[e][i], open)
				return k
			})
			if err != nil {
				return err
			}
			r, err := w.act(plan, pairs)
			if err != nil {
				return err
			}
			s.reward = float32(r)
			if w.cur.end != nil {
				s.done = true
				res := w.cur.end
				t.ended = append(t.ended, episodeEnd{Return: w.ret, maifs: true, AvgJCTHours: res.AvgJCT / 3600, MakespanHours: res.Makespan / 3600})
				if t.worlds[e], err = t.src.start(t.src.draw(t.rng), nil); err != nil {
					return err
				}
			}
		}
	}
	out, err := t.score(t.currentObs())
	if err != nil {
		return err
	}
	t.last = out.value
	return nil
}

// exploration is the rollout's deciding agents per decision point and the share of them whose
// sampled candidate was not their most probable open one.
func (t *maifsTrainer) exploration() (deciding, offGreedy *float64) {
	var n, off int
	for _, s := range t.samples {
		for i, open := range s.open {
			if count(open) < 2 {
				continue
			}
			n++
			if s.action[i] != s.greedy[i] {
				off++
			}
		}
	}
	d, o := float64(n)/float64(len(t.samples)), float64(off)/float64(max(n, 1))
	return &d, &o
}

func (t *maifsTrainer) currentObs() []*env.MAIFSObs {
	obs := make([]*env.MAIFSObs, len(t.worlds))
	for i, w := range t.worlds {
		obs[i] = w.cur.obs
	}
	return obs
}

// maifsScores are the trained network's outputs on a batch, on the host: per observation and
// agent the candidates' logits, the order scores and the value.
type maifsScores struct {
	logits [][][]float32
	order  [][]float32
	value  []float32
}

func (t *maifsTrainer) score(obs []*env.MAIFSObs) (maifsScores, error) {
	h, err := nn.NewMAIFSHost(t.net.Arch, obs)
	if err != nil {
		return maifsScores{}, err
	}
	var logits, order, value []float32
	nn.NoGrad(func() {
		s := nn.NewScope(t.dev)
		defer s.Drop()
		out := t.net.Forward(s, h.Tensors(s, t.dev))
		logits, order, value = nn.HostFloats(out.Logits, nil), nn.HostFloats(out.Order, nil), nn.HostFloats(out.Value, nil)
	})
	sc := maifsScores{logits: make([][][]float32, len(obs)), order: make([][]float32, len(obs)), value: value}
	for b, o := range obs {
		n := o.NumAgents()
		sc.order[b] = order[b*h.N : b*h.N+n]
		sc.logits[b] = make([][]float32, n)
		for i := range n {
			base := (b*h.N + i) * h.K
			sc.logits[b][i] = logits[base : base+len(o.Cand[i])]
		}
	}
	return sc, nil
}

// maifsBatch is a mini-batch on the device: the observations under their turn masks and, over
// the deciding agents (more than one open candidate) flattened, their sampled candidates,
// rollout log-probabilities, advantages (their decision point's) and turn masks.
type maifsBatch struct {
	host    *nn.MAIFSHost
	rows    []int64 // deciding agents' rows of the flattened [B*N] agents
	actions []int64
	oldLogp []float32
	adv     []float32
	ret     []float32
	oldV    []float32
}

func newMAIFSBatch(arch nn.MAIFSArch, samples []*maifsSample, adv, ret []float32, normAdv bool) (*maifsBatch, error) {
	obs := make([]*env.MAIFSObs, len(samples))
	for b, s := range samples {
		obs[b] = s.obs
	}
	h, err := nn.NewMAIFSHost(arch, obs)
	if err != nil {
		return nil, err
	}
	mb := &maifsBatch{host: h, ret: ret}
	for b, s := range samples {
		h.MaskTurns(b, s.open)
		mb.oldV = append(mb.oldV, s.value)
		for i, open := range s.open {
			if count(open) < 2 {
				continue
			}
			mb.rows = append(mb.rows, int64(b*h.N+i))
			mb.actions = append(mb.actions, int64(s.action[i]))
			mb.oldLogp = append(mb.oldLogp, s.logp[i])
			mb.adv = append(mb.adv, adv[b])
		}
	}
	if normAdv {
		normalise(mb.adv)
	}
	return mb, nil
}

func count(open []bool) int {
	n := 0
	for _, ok := range open {
		if ok {
			n++
		}
	}
	return n
}

// agentLogp is the tempered log-softmax of every agent's logits under its turn mask, its rows
// of the deciding agents ([D, K]) and those rows' mask.
func agentLogp(s *nn.Scope, out nn.MAIFSOutput, in *nn.MAIFSInput, rows []int64, temperature float64) (logp, open *ts.Tensor) {
	flat := []int64{in.B * in.N, in.K}
	idx := s.Longs(rows, int64(len(rows)))
	logits := s.Own(out.Logits.MustView(flat, false).MustIndexSelect(0, idx, true))
	logp = s.Own(logits.MustDivScalar(ts.FloatScalar(temperature), false).MustLogSoftmax(-1, gotch.Float, true))
	open = s.Own(in.CandOff.MustView(flat, false).MustIndexSelect(0, idx, true).MustLogicalNot(true).MustTotype(gotch.Float, true))
	return logp, open
}

// refLogp is the clone's log-probabilities of every sample's deciding agents' candidates under
// their turn masks, computed once per update.
func (t *maifsTrainer) refLogp(samples []maifsSample) ([][][]float32, error) {
	out := make([][][]float32, len(samples))
	const chunk = 16
	for lo := 0; lo < len(samples); lo += chunk {
		refs := make([]*maifsSample, 0, chunk)
		for i := lo; i < min(lo+chunk, len(samples)); i++ {
			refs = append(refs, &samples[i])
		}
		mb, err := newMAIFSBatch(t.ref.Arch, refs, make([]float32, len(refs)), nil, false)
		if err != nil {
			return nil, err
		}
		nn.NoGrad(func() {
			s := nn.NewScope(t.dev)
			defer s.Drop()
			in := mb.host.Tensors(s, t.dev)
			logp, _ := agentLogp(s, t.ref.Forward(s, in), in, mb.rows, t.fc.Temperature)
			all := nn.HostFloats(logp, nil)
			k, na := int(in.K), int(in.N)
			for r, row := range mb.rows {
				b, i := int(row)/na, int(row)%na
				out[lo+b] = append(out[lo+b], all[r*k:r*k+len(refs[b].obs.Cand[i])])
			}
		})
	}
	return out, nil
}

// update is PPO's epochs over the rollout's decision points in mini-batches.
func (t *maifsTrainer) update(lr, kl float64) (updateStats, error) {
	fc := t.fc
	n := len(t.samples)
	value, reward, done := make([]float32, n), make([]float32, n), make([]bool, n)
	for i, s := range t.samples {
		value[i], reward[i], done[i] = s.value, s.reward, s.done
	}
	adv, ret := advantages(reward, value, done, t.last, len(t.worlds), fc.Gamma, fc.GAELambda)
	var ref [][][]float32
	if t.ref != nil {
		var err error
		if ref, err = t.refLogp(t.samples); err != nil {
			return updateStats{}, err
		}
	}
	out, err := epochs(fc, n, t.rng, func(idx []int) (updateStats, error) {
		return t.minibatch(idx, adv, ret, ref, lr, kl)
	})
	out.ExplainedVar = explainedVariance(value, ret)
	return out, err
}

// minibatch takes one gradient step on the decision points idx; every loss term is the
// placement fine-tune's helper, over the deciding agents (policy terms) or the decision points
// (value).
func (t *maifsTrainer) minibatch(idx []int, adv, ret []float32, ref [][][]float32, lr, kl float64) (updateStats, error) {
	fc := t.fc
	samples := make([]*maifsSample, len(idx))
	advB, retB := make([]float32, len(idx)), make([]float32, len(idx))
	for k, i := range idx {
		samples[k], advB[k], retB[k] = &t.samples[i], adv[i], ret[i]
	}
	mb, err := newMAIFSBatch(t.net.Arch, samples, advB, retB, fc.NormAdv)
	if err != nil {
		return updateStats{}, err
	}
	var refRows [][]float32
	if ref != nil {
		for _, i := range idx {
			refRows = append(refRows, ref[i]...)
		}
	}
	var st updateStats
	nn.WithGrad(func() {
		s := nn.NewScope(t.dev)
		defer s.Drop()
		in := mb.host.Tensors(s, t.dev)
		out := t.net.Forward(s, in)
		loss := valueLoss(s, out.Value, s.Floats(mb.ret), s.Floats(mb.oldV), fc.ClipCoef, fc.ClipVLoss)
		st.ValueLoss = scalar(loss)
		loss = s.Own(loss.MustMulScalar(ts.FloatScalar(fc.VFCoef), false))
		// Decision points where no agent had a choice teach the critic only.
		if len(mb.rows) > 0 {
			logp, open := agentLogp(s, out, in, mb.rows, fc.Temperature)
			d := dist{logp: logp}
			logRatio := s.Own(d.logProb(s, mb.actions).MustSub(s.Floats(mb.oldLogp), false))
			ratio := s.Own(logRatio.MustExp(false))
			pgLoss := clippedSurrogate(s, ratio, s.Floats(mb.adv), fc.ClipCoef)
			entropy := d.entropy(s, open)
			loss = s.Own(loss.MustAdd(pgLoss, false))
			loss = s.Own(loss.MustSub(s.Own(entropy.MustMulScalar(ts.FloatScalar(fc.EntCoef), false)), false))
			if refRows != nil {
				klT := klToReference(s, s.Own(paddedRows(refRows, int(in.K), t.dev)), logp, open)
				loss = s.Own(loss.MustAdd(s.Own(klT.MustMulScalar(ts.FloatScalar(kl), false)), false))
				st.KLRef = scalar(klT)
			}
			st.ApproxKL, st.ClipFrac = ratioDiagnostics(s, ratio, logRatio, fc.ClipCoef)
			st.PolicyLoss, st.Entropy = scalar(pgLoss), scalar(entropy)
		}
		t.opt.ZeroGrad()
		loss.MustBackward()
		st.GradNorm = t.opt.ClipGradNorm(fc.MaxGradNorm)
		t.opt.Step(lr)
	})
	return st, nil
}

// evaluateAndKeepBest runs the network greedily on the held-out check and writes it as
// BestDir when its cost is the lowest so far.
func (t *maifsTrainer) evaluateAndKeepBest() (heldOut, error) {
	h, err := t.evaluate()
	if err != nil {
		return h, err
	}
	t.st.Evals = append(t.st.Evals, evalPoint{Update: t.st.Update, EnvSteps: t.st.EnvSteps, Held: h})
	if bestSoFar(t.st.Evals) {
		dir := filepath.Join(t.fc.Out, BestDir)
		if err := os.Remove(filepath.Join(dir, checkpoint.ManifestFile)); err != nil && !os.IsNotExist(err) {
			return h, err
		}
		if _, err := nn.SaveMAIFS(dir, t.net, t.lineage(map[string]float64{"held_out_avg_jct_h": h.MAIFS.AvgJCT, "held_out_makespan_h": h.MAIFS.Makespan})); err != nil {
			return h, err
		}
	}
	return h, nil
}

// evaluate decodes greedily along the coordination graph (env.MAIFSPolicy, as `schedrl jobs
// --policy ckpt:DIR` runs the checkpoint) on every maifs.generate workload at every val seed.
func (t *maifsTrainer) evaluate() (heldOut, error) {
	m := &maifsHeld{}
	h := heldOut{Seeds: t.src.valSeeds, MAIFS: m}
	order, err := jobs.NewPolicy("fifo")
	if err != nil {
		return h, err
	}
	for i, w := range t.src.val {
		for _, seed := range t.src.valSeeds {
			work, err := t.src.workload(w, seed)
			if err != nil {
				return h, fmt.Errorf("maifs.generate[%d] seed %d: %w", i, seed, err)
			}
			e, err := env.NewMAIFS(t.src.cluster, t.src.model, t.src.opts)
			if err != nil {
				return h, err
			}
			pol := &env.MAIFSPolicy{Env: e, Scorer: nn.MAIFSScorer{Net: t.net, Dev: t.dev}}
			res, err := fungible.Run(t.src.cluster, t.src.model, work, fungible.RunConfig{Policy: pol, Order: order, Round: maifsRound})
			if err != nil {
				return h, fmt.Errorf("held-out maifs.generate[%d] seed %d: %w", i, seed, err)
			}
			m.AvgJCTHours = append(m.AvgJCTHours, res.AvgJCT/3600)
			m.MakespanHours = append(m.MakespanHours, res.Makespan/3600)
			m.Cost += res.AvgJCT/3600 + t.src.opts.MakespanWeight*res.Makespan/3600/float64(len(work))
		}
	}
	k := float64(len(m.AvgJCTHours))
	for i := range m.AvgJCTHours {
		m.AvgJCT += m.AvgJCTHours[i] / k
		m.Makespan += m.MakespanHours[i] / k
	}
	m.Cost /= k
	h.Mean = -m.Cost
	return h, nil
}

func (t *maifsTrainer) lineage(metrics map[string]float64) nn.Lineage {
	return nn.Lineage{Parent: t.parent, Metrics: metrics,
		Hyper: map[string]any{"finetune": t.fc, "maifs": t.cfg.MAIFS, "seed": t.cfg.Seed, "updates": t.st.Update, "env_steps": t.st.EnvSteps}}
}

// checkpoint writes a resumable checkpoint: the weights, Adam's state, and the run state
// with every world's draw and applied moves.
func (t *maifsTrainer) checkpoint() error {
	st := t.st
	st.RNG, _ = t.pcg.MarshalBinary()
	st.Slots = make([]slotState, len(t.worlds))
	for i, w := range t.worlds {
		st.Slots[i] = slotState{Draw: w.draw, Actions: append([]int32(nil), w.moves...)}
	}
	return saveCheckpoint(t.fc.Out, st, func(dir string) error {
		if err := ts.SaveMultiNew(t.opt.State(), filepath.Join(dir, optimFile)); err != nil {
			return fmt.Errorf("save %s: %w", optimFile, err)
		}
		_, err := nn.SaveMAIFS(dir, t.net, t.lineage(nil))
		return err
	})
}

// result sums the run up and, when the budget is spent, makes the run directory the
// fine-tuned checkpoint (the last network; best/ holds the best checked one).
func (t *maifsTrainer) result() (Result, error) {
	res := t.sum(t.res)
	res.Summary = maifsSummary(&res)
	if !res.Complete {
		return res, nil
	}
	if err := os.Remove(filepath.Join(t.fc.Out, checkpoint.ManifestFile)); err != nil && !os.IsNotExist(err) {
		return res, err
	}
	f := res.Final.MAIFS
	_, err := nn.SaveMAIFS(t.fc.Out, t.net, t.lineage(map[string]float64{"final_avg_jct_h": f.AvgJCT, "final_makespan_h": f.Makespan, "env_steps": float64(res.EnvSteps)}))
	return res, err
}

// maifsSummary reports the held-out checks' avg JCT and makespan, before and after (and the
// best, when it is not the start's).
func maifsSummary(res *Result) family.Summary {
	s, e := res.Start.MAIFS, res.Final.MAIFS
	lines := []string{fmt.Sprintf("fine-tuned %s: held-out check (greedy, maifs.generate x maifs.val_seeds), avg JCT %.2f -> %.2f h, makespan %.1f -> %.1f h, "+
		"after %d env steps (decision points; %.1f steps/s, %.0f s)", res.Dir, s.AvgJCT, e.AvgJCT, s.Makespan, e.Makespan, res.EnvSteps, res.StepsPerSecond, res.Seconds)}
	if b := res.Best.MAIFS; res.BestUpdate > 0 {
		lines = append(lines, fmt.Sprintf("best held-out check: avg JCT %.2f h, makespan %.1f h at update %d, in %s", b.AvgJCT, b.Makespan, res.BestUpdate, filepath.Join(res.Dir, BestDir)))
	}
	return family.Summary{Metric: "heldout_avg_jct_h", Value: e.AvgJCT, Lines: lines,
		Note: fmt.Sprintf("%d env steps, %.1f steps/s, held-out avg JCT %.2f -> %.2f h, makespan %.1f -> %.1f h",
			res.EnvSteps, res.StepsPerSecond, s.AvgJCT, e.AvgJCT, s.Makespan, e.Makespan)}
}

func (t *maifsTrainer) close() {
	t.closeWorlds()
	t.rec.close()
}

func (t *maifsTrainer) closeWorlds() {
	for _, w := range t.worlds {
		w.close()
	}
}

// normalise makes adv zero-mean with unit (sample) standard deviation, in place.
func normalise(adv []float32) {
	if len(adv) < 2 {
		return
	}
	m, v := meanVar(adv)
	sd := math.Sqrt(v * float64(len(adv)) / float64(len(adv)-1))
	for k := range adv {
		adv[k] = float32((float64(adv[k]) - m) / (sd + 1e-8))
	}
}
