package finetune

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/executor"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/registry"
)

// Rollouts on workers (finetune.rollout_workers, docs/distributed.md). The learner (Run's
// process) and its N workers meet in an object store under rollouts/<run>/:
//
//	config.yaml             the run's config (a pod loads it; paths as their defaults)
//	start.json              the network's architecture and where the workers start
//	weights/<sha256>.ot     the trained network's model.ot, by digest
//	task-<U>.json           update U's weights digest, or stop
//	<U>/<w>-<sha256>.part   worker w's rollout of update U (gob of rolloutPart)
//
// The learner writes task U only after update U-1, and updates only once every worker's
// part of U is in: each worker rolls out with update U's own weights, so PPO stays on-policy.

// workerStart is where the workers start: the first update they roll out and, when the run
// resumes, each copy's episode (in copy order) and each worker's PCG.
type workerStart struct {
	Update int         `json:"update"`
	Arch   nn.Arch     `json:"arch"`
	Copies []slotState `json:"copies,omitempty"`
	RNG    [][]byte    `json:"rng,omitempty"`
}

// task is update U's order to the workers.
type task struct {
	Update  int    `json:"update"`
	Weights string `json:"weights,omitempty"` // sha256 of model.ot
	Stop    bool   `json:"stop,omitempty"`
}

// rolloutPart is worker w's rollout of one update, and its state after it (what a retried
// worker and the learner's checkpoint start from).
type rolloutPart struct {
	Update, Worker, Steps, Copies int
	Samples                       []wireSample // step-major: sample t*Copies+k
	Last                          []float32    // bootstrap value of each copy
	Ended                         []wireEnd
	Slots                         []slotState // each copy's episode after the rollout
	RNG                           []byte      // the worker's PCG after the rollout
}

// wireSample is a sample without the worker's row numbering, which the learner rebuilds.
type wireSample struct {
	Obs                 env.Observation
	Count, Weight       []float32
	Action              int
	Logp, Value, Reward float32
	Done                bool
}

type wireEnd struct {
	End           episodeEnd
	Defrag, MAIFS bool
}

// rolloutPoll bounds the wait between two looks at the store for a task or a part.
const rolloutPoll = 50 * time.Millisecond

// copiesOf are the environment copies worker w of n steps: c with c mod n = w.
func copiesOf(w, n, envs int) []int {
	var cs []int
	for c := w; c < envs; c += n {
		cs = append(cs, c)
	}
	return cs
}

func taskKey(prefix string, u int) string { return fmt.Sprintf("%s/task-%08d.json", prefix, u) }
func partDir(prefix string, u int) string { return fmt.Sprintf("%s/%08d", prefix, u) }
func weightsKey(prefix, digest string) string {
	return prefix + "/weights/" + digest + ".ot"
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// getVerified reads key, and checks it against digest when one is given.
func getVerified(ctx context.Context, store registry.Backend, key, digest string) ([]byte, error) {
	r, err := store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", store.URI(key), err)
	}
	if digest != "" && digestOf(data) != digest {
		return nil, fmt.Errorf("%s does not hold the bytes its name's sha256 says", store.URI(key))
	}
	return data, nil
}

// create stores data under key; the same key twice holds the same bytes (it is named by
// them, or by an update whose content is decided), so an existing one is left.
func create(ctx context.Context, store registry.Backend, key string, data []byte) error {
	err := store.Create(ctx, key, bytes.NewReader(data), int64(len(data)))
	if errors.Is(err, registry.ErrExists) {
		return nil
	}
	return err
}

// remoteRollouts is the learner's side: it starts the workers, hands them each update's
// weights and merges their parts.
type remoteRollouts struct {
	cfg     config.Config
	n       int
	store   registry.Backend
	prefix  string
	tmp     string // the learner's scratch folder (and a local executor's store)
	log     *slog.Logger
	start   workerStart
	started bool
	cancel  context.CancelFunc
	ended   chan struct{} // closed when the executor returns, with runErr
	runErr  error
	weights string // digest of the weights last handed out
	rows    []nn.RowIndex
	// after the last merged update: each copy's episode and each worker's PCG
	copies []slotState
	rng    [][]byte
}

// newRemoteRollouts prepares the rollout workers of a run at st; they start on the first
// rollout.
func newRemoteRollouts(cfg config.Config, st runState, arch nn.Arch, log *slog.Logger) (*remoteRollouts, error) {
	fc := cfg.Finetune
	n := fc.RolloutWorkers
	if st.Update > 0 && len(st.WorkerRNG) != n {
		return nil, fmt.Errorf("finetune.rollout_workers: %d, but the checkpoint of update %d in %s was written by %d rollout workers; resume with that many",
			n, st.Update, fc.Out, len(st.WorkerRNG))
	}
	tmp, err := os.MkdirTemp("", "schedrl-rollouts-")
	if err != nil {
		return nil, err
	}
	r := &remoteRollouts{cfg: cfg, n: n, tmp: tmp, log: log, rows: make([]nn.RowIndex, fc.NumEnvs),
		start: workerStart{Update: st.Update, Arch: arch, Copies: st.Slots, RNG: st.WorkerRNG}}
	if st.Update == 0 {
		r.start.Copies = nil // a fresh run: the workers draw their own episodes
	}
	store := config.RegistryConfig{Store: "file://" + filepath.Join(tmp, "store")}
	if cfg.Pipeline.Executor.Kind == "kubernetes" {
		store = cfg.Registry
	}
	if r.store, err = registry.OpenBackend(store); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("finetune.rollout_workers: the store: %w", err)
	}
	suffix := make([]byte, 4)
	for i := range suffix {
		suffix[i] = byte(rand.N(256))
	}
	r.prefix = "rollouts/" + hex.EncodeToString(suffix)
	return r, nil
}

// launch writes the run's config and start, and starts the workers through the executor.
func (r *remoteRollouts) launch() error {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	show, err := config.Show(config.Portable(r.cfg))
	if err != nil {
		return err
	}
	start, err := json.Marshal(r.start)
	if err != nil {
		return err
	}
	if err := create(ctx, r.store, r.prefix+"/config.yaml", show); err != nil {
		return fmt.Errorf("finetune.rollout_workers: %w", err)
	}
	if err := create(ctx, r.store, r.prefix+"/start.json", start); err != nil {
		return fmt.Errorf("finetune.rollout_workers: %w", err)
	}
	xc := r.cfg.Pipeline.Executor
	// Every worker runs at once: an update waits for all of them.
	xc.Parallelism, xc.Shards = r.n, r.n
	var x executor.Executor = &executor.Local{Parallelism: r.n}
	if xc.Kind == "kubernetes" {
		if x, err = executor.NewKubernetes(xc, r.cfg.Registry, r.log); err != nil {
			return err
		}
	}
	w := executor.Work{Name: "rollout", Shards: r.n, Args: []string{"finetune", "worker", "--run", r.prefix},
		Local: func(ctx context.Context, shard int) ([]byte, error) {
			return RolloutWorker(ctx, r.cfg, r.store, r.prefix, shard, r.n)
		},
		Progress: func(int, int) {}}
	r.ended = make(chan struct{})
	go func() {
		defer close(r.ended)
		if _, r.runErr = x.Run(ctx, w); r.runErr == nil {
			r.runErr = errors.New("the rollout workers ended before the learner stopped them")
		}
	}()
	r.started = true
	r.log.Info("finetune rollout workers started", "workers", r.n, "executor", xc.Kind, "store", r.store.URI(r.prefix+"/"))
	return nil
}

// collect hands update u's weights (pol's) to the workers and merges their parts into out.
func (r *remoteRollouts) collect(pol policy, u int, out *rollout) error {
	if !r.started {
		if err := r.launch(); err != nil {
			return err
		}
	}
	ctx := context.Background()
	path := filepath.Join(r.tmp, "model.ot")
	if err := nn.SaveWeights(pol.net, path); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	digest := digestOf(data)
	if err := create(ctx, r.store, weightsKey(r.prefix, digest), data); err != nil {
		return fmt.Errorf("rollout weights: %w", err)
	}
	t, _ := json.Marshal(task{Update: u, Weights: digest})
	if err := create(ctx, r.store, taskKey(r.prefix, u), t); err != nil {
		return fmt.Errorf("rollout task %d: %w", u, err)
	}
	parts, err := r.await(ctx, u)
	if err != nil {
		return err
	}
	if err := r.merge(u, parts, pol.net.Arch.NodeDim, out); err != nil {
		return err
	}
	// A retried worker restarts from its part of u; older parts and weights are spent.
	r.deleteAll(ctx, partDir(r.prefix, u-1)+"/")
	if r.weights != "" && r.weights != digest {
		r.store.Delete(ctx, weightsKey(r.prefix, r.weights))
	}
	r.weights = digest
	return nil
}

// await waits for every worker's part of update u, or the executor's failure.
func (r *remoteRollouts) await(ctx context.Context, u int) ([]*rolloutPart, error) {
	dir := partDir(r.prefix, u) + "/"
	for wait := time.Millisecond; ; wait = min(2*wait, rolloutPoll) {
		names, err := r.store.List(ctx, dir)
		if err != nil && !errors.Is(err, registry.ErrNoStore) {
			return nil, fmt.Errorf("rollout parts of update %d: %w", u, err)
		}
		byWorker := map[int][]string{}
		for _, name := range names {
			w, rest, ok := strings.Cut(name, "-")
			i, err := strconv.Atoi(w)
			if ok && err == nil && strings.HasSuffix(rest, ".part") {
				byWorker[i] = append(byWorker[i], name)
			}
		}
		if len(byWorker) == r.n {
			return r.read(ctx, u, dir, byWorker)
		}
		select {
		case <-r.ended:
			return nil, fmt.Errorf("rollout of update %d: %w", u, r.runErr)
		case <-time.After(wait):
		}
	}
}

func (r *remoteRollouts) read(ctx context.Context, u int, dir string, byWorker map[int][]string) ([]*rolloutPart, error) {
	parts := make([]*rolloutPart, r.n)
	for w := range r.n {
		names := byWorker[w]
		if len(names) != 1 {
			return nil, fmt.Errorf("rollout of update %d: worker %d wrote different parts %v: its rollout is not deterministic", u, w, names)
		}
		digest := strings.TrimSuffix(strings.TrimPrefix(names[0], strconv.Itoa(w)+"-"), ".part")
		data, err := getVerified(ctx, r.store, dir+names[0], digest)
		if err != nil {
			return nil, fmt.Errorf("rollout of update %d, worker %d: %w", u, w, err)
		}
		var p rolloutPart
		if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&p); err != nil {
			return nil, fmt.Errorf("rollout of update %d, worker %d: %s: %w", u, w, r.store.URI(dir+names[0]), err)
		}
		want := len(copiesOf(w, r.n, r.cfg.Finetune.NumEnvs))
		if p.Update != u || p.Worker != w || p.Steps != r.cfg.Finetune.RolloutSteps || p.Copies != want || len(p.Samples) != p.Steps*p.Copies || len(p.Last) != want || len(p.Slots) != want {
			return nil, fmt.Errorf("rollout of update %d, worker %d: the part is of update %d, worker %d, %d steps of %d copies; want %d steps of %d copies",
				u, w, p.Update, p.Worker, p.Steps, p.Copies, r.cfg.Finetune.RolloutSteps, want)
		}
		parts[w] = &p
	}
	return parts, nil
}

// merge puts the parts' samples in copy order into out (as one process's rollout lays them
// out) and numbers each copy's rows afresh, as its compactor did.
func (r *remoteRollouts) merge(u int, parts []*rolloutPart, nodeDim int, out *rollout) error {
	envs := out.envs
	steps := len(out.samples) / envs
	for c := range r.rows {
		r.rows[c].Reset(nodeDim)
	}
	out.ended = out.ended[:0]
	if len(out.last) != envs {
		out.last = make([]float32, envs)
	}
	r.copies = make([]slotState, envs)
	r.rng = make([][]byte, r.n)
	for w, p := range parts {
		for k, c := range copiesOf(w, r.n, envs) {
			for t := range steps {
				ws := &p.Samples[t*p.Copies+k]
				s := &out.samples[t*envs+c]
				s.obs, s.count, s.weight = ws.Obs, ws.Count, ws.Weight
				s.action, s.logp, s.value, s.reward, s.done = ws.Action, ws.Logp, ws.Value, ws.Reward, ws.Done
				s.rows, s.ids = &r.rows[c], r.rows[c].Add(&s.obs, s.ids[:0])
			}
			out.last[c] = p.Last[k]
			r.copies[c] = p.Slots[k]
		}
		for _, e := range p.Ended {
			end := e.End
			end.defrag, end.maifs = e.Defrag, e.MAIFS
			out.ended = append(out.ended, end)
		}
		r.rng[w] = p.RNG
	}
	return nil
}

// snapshot puts the workers' episodes and PCGs after the last update into st.
func (r *remoteRollouts) snapshot(st *runState) {
	st.Slots, st.WorkerRNG = r.copies, r.rng
}

// deleteAll removes the keys under prefix (a folder); left-overs are only garbage.
func (r *remoteRollouts) deleteAll(ctx context.Context, prefix string) {
	names, err := r.store.List(ctx, prefix)
	for _, n := range names {
		if err != nil {
			break
		}
		if strings.HasSuffix(n, "/") {
			r.deleteAll(ctx, prefix+n)
			continue
		}
		err = r.store.Delete(ctx, prefix+n)
	}
	if err != nil && !errors.Is(err, registry.ErrNoStore) {
		r.log.Warn("finetune: rollout files not deleted", "prefix", r.store.URI(prefix), "err", err)
	}
}

// close stops the workers, waits for them a while, and removes the run's files. next is the
// update the learner would hand out next: its task stops the workers, or, when a failed
// update already handed it out, the one after it does.
func (r *remoteRollouts) close(next int) {
	defer os.RemoveAll(r.tmp)
	if !r.started {
		return
	}
	ctx := context.Background()
	var err error
	for _, u := range []int{next, next + 1} {
		t, _ := json.Marshal(task{Update: u, Stop: true})
		err = errors.Join(err, create(ctx, r.store, taskKey(r.prefix, u), t))
	}
	if err == nil {
		select {
		case <-r.ended:
		case <-time.After(time.Minute):
			r.log.Warn("finetune: rollout workers did not stop within a minute; cancelling them")
		}
	}
	r.cancel()
	<-r.ended
	r.deleteAll(ctx, r.prefix+"/")
}

// RolloutWorker is worker w of n of the rollouts under prefix in store (docs/distributed.md):
// it rolls out its environment copies with each update's weights and writes its parts until
// the learner stops it, and returns its executor part (a line saying what it did).
func RolloutWorker(ctx context.Context, cfg config.Config, store registry.Backend, prefix string, w, n int) ([]byte, error) {
	if n != cfg.Finetune.RolloutWorkers || w < 0 || w >= n {
		return nil, fmt.Errorf("rollout worker %d/%d: the run has finetune.rollout_workers %d", w, n, cfg.Finetune.RolloutWorkers)
	}
	run, err := trainers.Lookup("finetune.env", cfg.Finetune.Env)
	if err != nil {
		return nil, err
	}
	wr := &rolloutWorker{cfg: cfg, store: store, prefix: prefix, w: w, n: n}
	if _, err := run(ctx, cfg, Options{worker: wr}); err != nil {
		return nil, fmt.Errorf("rollout worker %d/%d: %w", w, n, err)
	}
	if !wr.ran {
		return nil, fmt.Errorf("finetune.rollout_workers: env %s has no rollout worker", cfg.Finetune.Env)
	}
	return fmt.Appendf(nil, `{"worker":%d,"updates":%d}`+"\n", w, wr.updates), nil
}

// rolloutWorker is a worker in progress.
type rolloutWorker struct {
	cfg     config.Config
	store   registry.Backend
	prefix  string
	w, n    int
	ran     bool
	updates int
}

// run rolls out eps's episodes until the stop task.
func (wr *rolloutWorker) run(ctx context.Context, eps episodeSource) error {
	wr.ran = true
	// Grad mode is per OS thread in libtorch; keep every tensor call on this one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fc := wr.cfg.Finetune
	data, err := getVerified(ctx, wr.store, wr.prefix+"/start.json", "")
	if err != nil {
		return err
	}
	var start workerStart
	if err := json.Unmarshal(data, &start); err != nil {
		return fmt.Errorf("%s: %w", wr.store.URI(wr.prefix+"/start.json"), err)
	}
	dev, err := nn.Device(wr.cfg.Device)
	if err != nil {
		return err
	}
	net, err := nn.NewNet(start.Arch, dev)
	if err != nil {
		return fmt.Errorf("%s: field arch: %w", wr.store.URI(wr.prefix+"/start.json"), err)
	}
	pol := policy{net: net, dev: dev, temperature: fc.Temperature}
	mine := copiesOf(wr.w, wr.n, fc.NumEnvs)
	workers := fc.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	pl := &pool{eps: eps, slots: make([]*slot, len(mine)), workers: workers}
	for k := range pl.slots {
		pl.slots[k] = &slot{}
	}
	u, slots, rngState, err := wr.resumePoint(ctx, start, mine)
	if err != nil {
		return err
	}
	pcg := rand.NewPCG(uint64(wr.cfg.Seed), 0x726f6c6c6f757400+uint64(wr.w)) // "rollout\0" + w
	if rngState != nil {
		if err := pcg.UnmarshalBinary(rngState); err != nil {
			return fmt.Errorf("rollout worker %d: its PCG: %w", wr.w, err)
		}
	}
	rng := rand.New(pcg)
	fresh := slots == nil
	if !fresh {
		if err := pl.parallel(func(k int, s *slot) error { return pl.start(s, slots[k].Draw, slots[k].Actions) }); err != nil {
			return err
		}
	}
	loaded := ""
	idle := wr.cfg.Pipeline.Executor.Timeout
	for ; ; u++ {
		t, err := wr.await(ctx, u, idle)
		if err != nil {
			return err
		}
		if t.Stop {
			return nil
		}
		if t.Weights != loaded {
			if err := wr.load(ctx, net, t.Weights); err != nil {
				return err
			}
			loaded = t.Weights
		}
		if fresh {
			if err := pl.startFresh(allSlots(len(mine)), rng); err != nil {
				return err
			}
			if fc.Stagger {
				if err := pl.stagger(pol, rng); err != nil {
					return err
				}
			}
			fresh = false
		}
		r := newRollout(fc.RolloutSteps, len(mine))
		if err := pl.collect(pol, r, rng); err != nil {
			return err
		}
		part, err := encodePart(u, wr.w, r, pl, pcg)
		if err != nil {
			return err
		}
		key := fmt.Sprintf("%s/%d-%s.part", partDir(wr.prefix, u), wr.w, digestOf(part))
		if err := create(ctx, wr.store, key, part); err != nil {
			return fmt.Errorf("rollout worker %d, update %d: %w", wr.w, u, err)
		}
		wr.updates++
	}
}

// resumePoint is the update the worker rolls out first and the state it starts from: after
// its newest part in the store (a retried pod), else the learner's start.
func (wr *rolloutWorker) resumePoint(ctx context.Context, start workerStart, mine []int) (int, []slotState, []byte, error) {
	names, err := wr.store.List(ctx, wr.prefix+"/")
	if err != nil {
		return 0, nil, nil, fmt.Errorf("rollout worker %d: the store: %w", wr.w, err)
	}
	slices.Reverse(names)
	for _, name := range names {
		u, err := strconv.Atoi(strings.TrimSuffix(name, "/"))
		if err != nil || !strings.HasSuffix(name, "/") || u < start.Update {
			continue
		}
		parts, err := wr.store.List(ctx, partDir(wr.prefix, u)+"/")
		if err != nil {
			return 0, nil, nil, err
		}
		for _, p := range parts {
			digest, ok := strings.CutPrefix(p, strconv.Itoa(wr.w)+"-")
			if !ok {
				continue
			}
			data, err := getVerified(ctx, wr.store, partDir(wr.prefix, u)+"/"+p, strings.TrimSuffix(digest, ".part"))
			if err != nil {
				return 0, nil, nil, err
			}
			var part rolloutPart
			if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&part); err != nil {
				return 0, nil, nil, err
			}
			return u + 1, part.Slots, part.RNG, nil
		}
	}
	if start.Copies == nil {
		return start.Update, nil, nil, nil
	}
	if len(start.RNG) != wr.n || len(start.Copies) != wr.cfg.Finetune.NumEnvs {
		return 0, nil, nil, fmt.Errorf("%s: %d copies and %d worker PCGs; the run has %d and %d",
			wr.store.URI(wr.prefix+"/start.json"), len(start.Copies), len(start.RNG), wr.cfg.Finetune.NumEnvs, wr.n)
	}
	slots := make([]slotState, len(mine))
	for k, c := range mine {
		slots[k] = start.Copies[c]
	}
	return start.Update, slots, start.RNG[wr.w], nil
}

// await waits for update u's task; a learner silent for longer than idle is gone.
func (wr *rolloutWorker) await(ctx context.Context, u int, idle time.Duration) (task, error) {
	deadline := time.Now().Add(idle)
	for wait := time.Millisecond; ; wait = min(2*wait, rolloutPoll) {
		data, err := getVerified(ctx, wr.store, taskKey(wr.prefix, u), "")
		if err == nil {
			var t task
			if err := json.Unmarshal(data, &t); err != nil {
				return t, fmt.Errorf("%s: %w", wr.store.URI(taskKey(wr.prefix, u)), err)
			}
			return t, nil
		}
		if !errors.Is(err, registry.ErrNotFound) {
			return task{}, err
		}
		if time.Now().After(deadline) {
			return task{}, fmt.Errorf("rollout worker %d: no task for update %d within %v (pipeline.executor.timeout): the learner is gone", wr.w, u, idle)
		}
		select {
		case <-ctx.Done():
			return task{}, context.Cause(ctx)
		case <-time.After(wait):
		}
	}
}

// load reads the weights of digest from the store into net.
func (wr *rolloutWorker) load(ctx context.Context, net *nn.Net, digest string) error {
	data, err := getVerified(ctx, wr.store, weightsKey(wr.prefix, digest), digest)
	if err != nil {
		return fmt.Errorf("rollout worker %d: weights: %w", wr.w, err)
	}
	f, err := os.CreateTemp("", "schedrl-weights-*.ot")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if err2 := f.Close(); err == nil {
		err = err2
	}
	if err != nil {
		return err
	}
	if err := nn.LoadWeights(net, f.Name()); err != nil {
		return fmt.Errorf("rollout worker %d: weights %s: %w", wr.w, digest, err)
	}
	return nil
}

// encodePart is the worker's rollout r of update u and its state after it.
func encodePart(u, w int, r *rollout, pl *pool, pcg *rand.PCG) ([]byte, error) {
	copies := r.envs
	p := rolloutPart{Update: u, Worker: w, Steps: len(r.samples) / copies, Copies: copies, Last: r.last,
		Samples: make([]wireSample, len(r.samples)), Slots: make([]slotState, copies)}
	for i := range r.samples {
		s := &r.samples[i]
		p.Samples[i] = wireSample{Obs: s.obs, Count: s.count, Weight: s.weight, Action: s.action,
			Logp: s.logp, Value: s.value, Reward: s.reward, Done: s.done}
	}
	for _, e := range r.ended {
		p.Ended = append(p.Ended, wireEnd{End: e, Defrag: e.defrag, MAIFS: e.maifs})
	}
	for k, s := range pl.slots {
		p.Slots[k] = slotState{Draw: s.draw, Actions: slices.Clone(s.actions)}
	}
	var err error
	if p.RNG, err = pcg.MarshalBinary(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
