package podlog

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/sim"
)

// LiveOptions configure a Live log.
type LiveOptions struct {
	Client kubernetes.Interface
	// Dir receives the closed log files (created if missing).
	Dir string
	// Model is the fragment measure's typical shapes, written into every header.
	Model *sim.FragModel
	// TieSeed is the node tie order's seed (the extender's --seed), written into every header.
	TieSeed uint64
	// MaxBytes closes the file once the events after its header and carried state take this
	// many bytes, and starts the next (default 64 MiB).
	MaxBytes int64
	// MaxAge closes the file once it is this old (default 1 h; checked every MaxAge/4, at most a minute).
	MaxAge time.Duration
	// Meta is added to every header's meta (who wrote it: policy, model).
	Meta        map[string]string
	SyncTimeout time.Duration
	Log         *slog.Logger
}

// Live records a running cluster as version-2 decision logs in a folder: every pod's arrival
// (when its informer first sees it), bind (with its node and GPUs, when it is seen bound),
// complete (containers done) or delete (removed), stamped with the time it was seen. The file
// being written is hidden; when it is rotated (MaxBytes, MaxAge, a change of the nodes) or the
// log is closed, it is synced and renamed to its content-addressed name, and the next file
// begins with a fresh header and the pods the cluster has at that moment (arrive, and start for
// the running ones, at time 0: state, not decisions). A restart does the same: Recover closes
// what the last process left open, and the first file carries the state it finds.
type Live struct {
	opts    LiveOptions
	factory informers.SharedInformerFactory
	nodes   cache.SharedIndexInformer
	pods    cache.SharedIndexInformer

	mu           sync.Mutex
	started      bool
	closed       bool
	cur          *openFile
	base         int64 // bytes of the current file's header and carried state
	rec          *Recorder
	headerNodes  map[string]sim.Node
	nodesChanged bool
	skippedUIDs  map[string]bool
	files        []string
	counts       map[string]int

	events  *prometheus.CounterVec
	skipped *prometheus.CounterVec
	rotated prometheus.Counter
}

// Skip reasons of the skipped-events metric.
const (
	SkipMalformed   = "malformed"    // the pod's GPU request or gpu-index does not read
	SkipUnknownNode = "unknown-node" // bound to a node with no Node object
	SkipRefused     = "refused"      // the replay refused it (e.g. over-committed by another scheduler)
)

// StartLive recovers files left open in Dir, starts informers, waits for their first list,
// and opens the first file. It records until ctx ends; call Close to close the last file.
func StartLive(ctx context.Context, opts LiveOptions) (*Live, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 64 << 20
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = time.Hour
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = 2 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	recovered, err := Recover(opts.Dir)
	for _, p := range recovered {
		opts.Log.Info("decision log: closed the file a previous run left open", "file", p)
	}
	if err != nil {
		opts.Log.Warn("decision log: recovery", "err", err)
	}
	l := &Live{opts: opts, skippedUIDs: map[string]bool{}, counts: map[string]int{},
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schedrl_decision_log_events_total",
			Help: "Events written to the decision log, by type."}, []string{"type"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schedrl_decision_log_skipped_total",
			Help: "Pod changes left out of the decision log, by reason (malformed, unknown-node, refused)."}, []string{"reason"}),
		rotated: prometheus.NewCounter(prometheus.CounterOpts{Name: "schedrl_decision_log_files_total",
			Help: "Decision log files closed (rotation, restart, shutdown)."}),
	}
	l.factory = informers.NewSharedInformerFactory(opts.Client, 0)
	l.nodes = l.factory.Core().V1().Nodes().Informer()
	l.pods = l.factory.Core().V1().Pods().Informer()
	l.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { l.nodeEvent() },
		UpdateFunc: func(any, any) { l.nodeEvent() },
		DeleteFunc: func(any) { l.nodeEvent() },
	})
	l.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { l.podEvent(o, false) },
		UpdateFunc: func(_, o any) { l.podEvent(o, false) },
		DeleteFunc: func(o any) { l.podEvent(o, true) },
	})
	l.factory.Start(ctx.Done())
	wait, cancel := context.WithTimeout(ctx, opts.SyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(wait.Done(), l.nodes.HasSynced, l.pods.HasSynced) {
		return nil, fmt.Errorf("decision log: nodes and pods not listed from the API server within %s", opts.SyncTimeout)
	}
	l.mu.Lock()
	err = l.open(time.Now(), nil)
	l.started = err == nil
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	go l.tick(ctx)
	return l, nil
}

// Collectors are the log's metrics, for the extender's /metrics.
func (l *Live) Collectors() []prometheus.Collector {
	return []prometheus.Collector{l.events, l.skipped, l.rotated}
}

// Events counts the events written since the start, by type (the state carried into a new
// file included).
func (l *Live) Events() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.counts)
}

// Files lists the files this Live closed, in order.
func (l *Live) Files() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.files)
}

// Rotate closes the current file and starts the next.
func (l *Live) Rotate() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	return l.rotate(time.Now())
}

// SetMeta changes one header meta entry (the model that decides, after a switch) and starts
// the next file, so each file's header names who decided in it.
func (l *Live) SetMeta(key, value string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opts.Meta = maps.Clone(l.opts.Meta)
	if l.opts.Meta == nil {
		l.opts.Meta = map[string]string{}
	}
	l.opts.Meta[key] = value
	if l.closed {
		return nil
	}
	return l.rotate(time.Now())
}

// Close closes the current file (synced, renamed to its content address); later changes are
// not recorded.
func (l *Live) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return l.closeFile()
}

func (l *Live) tick(ctx context.Context) {
	every := min(l.opts.MaxAge/4, time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			l.mu.Lock()
			if !l.closed && (l.rec == nil || l.nodesChanged || now.Sub(l.cur.opened) >= l.opts.MaxAge) {
				if err := l.rotate(time.Now()); err != nil {
					l.opts.Log.Warn("decision log: rotate", "err", err)
				}
			}
			l.mu.Unlock()
		}
	}
}

// open starts a file: the header of the Node objects the informer holds now, then, as state at
// time 0 (arrive, and start for running pods; running ones first, each in name order), the pods
// of carry (the last file's state, on rotation) or, on the first file, the pods the informer
// holds. Carrying the log's own state rather than the informer's, which may be ahead of the
// notifications handled so far, keeps every later decision a bind. The caller holds mu.
func (l *Live) open(now time.Time, carry []Carried) error {
	var nodes []corev1.Node
	for _, o := range l.nodes.GetStore().List() {
		nodes = append(nodes, *o.(*corev1.Node))
	}
	var running, waiting []*corev1.Pod
	for _, o := range l.pods.GetStore().List() {
		p := o.(*corev1.Pod)
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		case p.Spec.NodeName != "":
			running = append(running, p)
		default:
			waiting = append(waiting, p)
		}
	}
	byName := func(a, b *corev1.Pod) int { return strings.Compare(kube.TaskName(a), kube.TaskName(b)) }
	slices.SortFunc(running, byName)
	slices.SortFunc(waiting, byName)
	meta := maps.Clone(l.opts.Meta)
	if meta == nil {
		meta = map[string]string{}
	}
	meta["protocol"] = "kube-extender"
	meta[MetaEpoch] = now.UTC().Format(time.RFC3339Nano)
	meta[MetaGPUIndex] = GPUIndexRule
	if carry != nil {
		running, waiting = nil, nil
	}
	meta["carried"] = strconv.Itoa(len(running) + len(waiting) + len(carry))
	meta["tie_seed"] = strconv.FormatUint(l.opts.TieSeed, 10)
	seed := l.opts.TieSeed
	h, err := Header(nodes, l.opts.Model, &seed, meta)
	if err != nil {
		return fmt.Errorf("decision log: %w", err)
	}
	f, err := createOpen(l.opts.Dir, now)
	if err != nil {
		return err
	}
	rec, err := NewRecorder(f, h, now)
	if err != nil {
		f.f.Close()
		os.Remove(f.f.Name())
		return fmt.Errorf("decision log: %w", err)
	}
	l.cur, l.rec, l.nodesChanged = f, rec, false
	l.headerNodes = map[string]sim.Node{}
	for _, n := range h.NodesOf() {
		l.headerNodes[n.Name] = n
	}
	for _, p := range append(running, waiting...) {
		l.record(p, false, now, sim.EvStart)
	}
	for _, c := range carry {
		l.carry(c, now)
	}
	err = l.flush()
	l.base = f.n
	return err
}

func (l *Live) flush() error {
	if err := l.rec.Flush(); err != nil {
		return fmt.Errorf("decision log: %w", err)
	}
	return nil
}

// closeFile commits the current file. The caller holds mu.
func (l *Live) closeFile() error {
	if l.cur == nil {
		return nil
	}
	if err := l.flush(); err != nil {
		return err
	}
	cur := l.cur
	l.cur, l.rec = nil, nil
	path, err := cur.commit(l.opts.Dir)
	if err != nil {
		return err
	}
	l.files = append(l.files, path)
	l.rotated.Inc()
	return nil
}

// rotate closes the current file and opens the next; with no file open (an earlier open
// failed, e.g. while the cluster listed no nodes) it opens one from what the informers hold.
// The caller holds mu.
func (l *Live) rotate(now time.Time) error {
	if l.rec == nil {
		return l.open(now, nil)
	}
	carry := l.rec.State()
	if err := l.closeFile(); err != nil {
		return err
	}
	return l.open(now, carry)
}

// carry records one pod of the last file's state in the new one. The caller holds mu.
func (l *Live) carry(c Carried, now time.Time) {
	if err := l.rec.Arrive(now, c.UID, c.Task, c.Request); err != nil {
		l.skip(c.UID, SkipRefused, err)
		return
	}
	l.count("carried")
	if !c.Running {
		return
	}
	if _, ok := l.headerNodes[c.Node]; !ok {
		l.skip(c.UID, SkipUnknownNode, fmt.Errorf("pod %s: runs on node %s, which no longer has a Node object", c.Task, c.Node))
		return
	}
	gpus := c.GPUs
	if err := l.rec.Bind(now, c.UID, c.Node, &gpus, sim.EvStart); err != nil {
		l.skip(c.UID, SkipRefused, err)
		return
	}
	l.count(sim.EvStart)
}

// nodeEvent marks the header stale when the Node objects no longer match it; the next pod
// event or tick starts a new file.
func (l *Live) nodeEvent() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started || l.closed || l.nodesChanged {
		return
	}
	objs := l.nodes.GetStore().List()
	seen := 0
	for _, o := range objs {
		n, err := kube.NodeOf(o.(*corev1.Node))
		if err != nil {
			continue
		}
		seen++
		if l.headerNodes[n.Name] != n {
			l.nodesChanged = true
			return
		}
	}
	l.nodesChanged = seen != len(l.headerNodes)
}

func (l *Live) podEvent(o any, deleted bool) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started || l.closed {
		return
	}
	now := time.Now()
	for range 2 {
		if l.nodesChanged || l.rec == nil {
			// The new file's header lists the nodes as they are now.
			if err := l.rotate(now); err != nil {
				l.opts.Log.Warn("decision log: rotate", "err", err)
				return
			}
		}
		l.record(pod, deleted, now, sim.EvBind)
		if !l.nodesChanged {
			break
		}
		// Bound to a node the header does not list yet: once more, in a file that lists it.
	}
	if err := l.flush(); err != nil {
		l.opts.Log.Warn("decision log: write", "err", err)
		return
	}
	if l.cur.n-l.base >= l.opts.MaxBytes {
		if err := l.rotate(now); err != nil {
			l.opts.Log.Warn("decision log: rotate", "err", err)
		}
	}
}

// record brings the log's view of one pod up to the object: level-based, so an old or repeated
// notification changes nothing. bindType is EvBind for decisions seen live, EvStart for the
// state a new file begins with. The caller holds mu.
func (l *Live) record(pod *corev1.Pod, deleted bool, now time.Time, bindType string) {
	uid := string(pod.UID)
	name := kube.TaskName(pod)
	known, running := l.rec.Known(uid)
	done := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if deleted {
		delete(l.skippedUIDs, uid)
		if known {
			l.write(sim.EvDelete, l.rec.End(now, uid, false))
		}
		return
	}
	if !known {
		if done || l.skippedUIDs[uid] {
			return
		}
		t, err := kube.TaskOf(pod)
		if err != nil {
			l.skip(uid, SkipMalformed, fmt.Errorf("pod %s: %w", name, err))
			return
		}
		if err := l.rec.Arrive(now, uid, name, t); err != nil {
			l.skip(uid, SkipRefused, err)
			return
		}
		if bindType == sim.EvStart {
			l.count("carried")
		} else {
			l.count(sim.EvArrive)
		}
	}
	if pod.Spec.NodeName != "" && !running {
		gpus, err := GPUs(pod)
		if err != nil {
			l.skip(uid, SkipMalformed, fmt.Errorf("pod %s: %w", name, err))
			return
		}
		if _, ok := l.headerNodes[pod.Spec.NodeName]; !ok {
			if _, exists, _ := l.nodes.GetStore().GetByKey(pod.Spec.NodeName); exists {
				l.nodesChanged = true
				return
			}
			l.skip(uid, SkipUnknownNode, fmt.Errorf("pod %s: bound to node %s, which has no Node object", name, pod.Spec.NodeName))
			return
		}
		if err := l.rec.Bind(now, uid, pod.Spec.NodeName, gpus, bindType); err != nil {
			l.skip(uid, SkipRefused, err)
			return
		}
		l.count(bindType)
		running = true
	}
	if done {
		typ := sim.EvDelete
		if running {
			typ = sim.EvComplete
		}
		l.write(typ, l.rec.End(now, uid, true))
	}
}

func (l *Live) write(typ string, err error) {
	if err != nil {
		l.opts.Log.Warn("decision log: event left out", "err", err)
		l.skipped.WithLabelValues(SkipRefused).Inc()
		return
	}
	l.count(typ)
}

func (l *Live) count(typ string) {
	l.events.WithLabelValues(typ).Inc()
	l.counts[typ]++
}

// skip leaves a pod's change out and says why; a pod left out before it arrived stays out
// until it is deleted.
func (l *Live) skip(uid, reason string, err error) {
	if known, _ := l.rec.Known(uid); !known {
		l.skippedUIDs[uid] = true
	}
	l.skipped.WithLabelValues(reason).Inc()
	l.opts.Log.Warn("decision log: pod change left out", "reason", reason, "err", err)
}
