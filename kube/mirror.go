package kube

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/schedrl/schedrl/sim"
)

// Mirror is a live model of a Kubernetes cluster: Node objects and the pods bound to them
// (from informers), plus the placements a scheduler has decided but not yet bound (assumed,
// as kube-scheduler's cache does, because the next pod is scheduled before the last bind
// lands). Nodes are ordered by name and ties between them broken by sim.SeededTieOrder of the
// tie seed, so the same pods in the same order get the same decisions as `schedrl sim`.
//
// Every placement goes through sim.Cluster.Place, which refuses what does not fit: the model
// never holds more on a GPU than it has. A bound pod that does not fit (placed by another
// scheduler onto a full GPU) is left out and counted in Conflicts.
type Mirror struct {
	opts MirrorOptions

	mu        sync.Mutex
	nodes     map[string]sim.Node
	bound     map[string]binding // task name -> where its pod is bound
	assumed   map[string]assumption
	pending   map[string]*corev1.Pod
	podByName map[string]*corev1.Pod
	cluster   *sim.Cluster
	dirty     bool
	conflicts map[string]string // task name -> why it is not in the model

	factory informers.SharedInformerFactory
	synced  []cache.InformerSynced
}

// MirrorOptions configure a Mirror.
type MirrorOptions struct {
	// Model is the fragment measure's typical task shapes (sim.TypicalShapes of the workload).
	Model *sim.FragModel
	// TieSeed seeds the order in which equally scored nodes are preferred.
	TieSeed uint64
	// AssumeTTL drops an assumed placement that no bind confirmed within it (default 2 min).
	AssumeTTL time.Duration
	Log       *slog.Logger
}

type binding struct {
	uid  types.UID
	task sim.Task
	node string
	gpus sim.GPUSet
	// noIndex: a GPU pod bound without a gpu-index annotation; its GPUs are the model's
	// best fit on the node.
	noIndex bool
}

// same reports whether two bindings hold the same request at the same place.
func (b binding) same(o binding) bool {
	return b.uid == o.uid && b.node == o.node && b.gpus == o.gpus && b.noIndex == o.noIndex &&
		b.task.CPU == o.task.CPU && b.task.Mem == o.task.Mem && b.task.NumGPU == o.task.NumGPU &&
		b.task.GPUMilli == o.task.GPUMilli && slices.Equal(b.task.GPUTypes, o.task.GPUTypes)
}

type assumption struct {
	binding
	at time.Time
}

// NewMirror builds a mirror fed by informers on client; call Start.
func NewMirror(client kubernetes.Interface, opts MirrorOptions) *Mirror {
	if opts.AssumeTTL <= 0 {
		opts.AssumeTTL = 2 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	m := &Mirror{opts: opts, nodes: map[string]sim.Node{}, bound: map[string]binding{}, assumed: map[string]assumption{},
		pending: map[string]*corev1.Pod{}, podByName: map[string]*corev1.Pod{}, conflicts: map[string]string{}, dirty: true}
	// No periodic resync: every change arrives as an event, and a resync would only repeat them.
	m.factory = informers.NewSharedInformerFactory(client, 0)
	nodes := m.factory.Core().V1().Nodes().Informer()
	pods := m.factory.Core().V1().Pods().Informer()
	nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { m.nodeEvent(o, false) },
		UpdateFunc: func(_, o any) { m.nodeEvent(o, false) },
		DeleteFunc: func(o any) { m.nodeEvent(o, true) },
	})
	pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { m.podEvent(o, false) },
		UpdateFunc: func(_, o any) { m.podEvent(o, false) },
		DeleteFunc: func(o any) { m.podEvent(o, true) },
	})
	m.synced = []cache.InformerSynced{nodes.HasSynced, pods.HasSynced}
	return m
}

// Start runs the informers until ctx ends and waits (at most timeout) for their first list.
func (m *Mirror) Start(ctx context.Context, timeout time.Duration) error {
	m.factory.Start(ctx.Done())
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(wait.Done(), m.synced...) {
		return fmt.Errorf("kube: nodes and pods not listed from the API server within %s", timeout)
	}
	// Build the model now, not in the first scheduling request.
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.current()
	return err
}

// Synced reports whether the informers have listed nodes and pods.
func (m *Mirror) Synced() bool {
	for _, s := range m.synced {
		if !s() {
			return false
		}
	}
	return true
}

func (m *Mirror) nodeEvent(o any, deleted bool) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	n, ok := o.(*corev1.Node)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if deleted {
		delete(m.nodes, n.Name)
		m.dirty = true
		return
	}
	sn, err := NodeOf(n)
	if err != nil {
		m.opts.Log.Warn("node left out of the model", "node", n.Name, "err", err)
		if _, had := m.nodes[n.Name]; had {
			delete(m.nodes, n.Name)
			m.dirty = true
		}
		return
	}
	if old, had := m.nodes[n.Name]; !had || old != sn {
		m.nodes[n.Name] = sn
		m.dirty = true
	}
}

func (m *Mirror) podEvent(o any, deleted bool) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	name := TaskName(pod)
	m.mu.Lock()
	defer m.mu.Unlock()
	done := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if deleted || done {
		delete(m.pending, name)
		delete(m.podByName, name)
		if a, ok := m.assumed[name]; ok && a.uid == pod.UID {
			delete(m.assumed, name)
		}
		m.unbind(name)
		return
	}
	m.podByName[name] = pod
	if pod.Spec.NodeName == "" {
		m.pending[name] = pod
		return
	}
	delete(m.pending, name)
	task, err := TaskOf(pod)
	if err != nil {
		m.conflicts[name] = err.Error()
		return
	}
	b := binding{uid: pod.UID, task: task, node: pod.Spec.NodeName}
	if s, ok := pod.Annotations[AnnotGPUIndex]; ok {
		if b.gpus, err = ParseGPUIndex(s); err != nil {
			m.conflicts[name] = err.Error()
			return
		}
	} else {
		b.noIndex = task.NumGPU > 0
	}
	if old, ok := m.bound[name]; ok && old.same(b) {
		return
	}
	if a, ok := m.assumed[name]; ok && a.same(b) {
		// The bind we assumed landed: the model already holds it.
		delete(m.assumed, name)
		m.bound[name] = b
		return
	}
	delete(m.assumed, name)
	m.unbind(name)
	m.bound[name] = b
	m.place(name, b)
}

// unbind removes a task from the maps and (when current) the model.
func (m *Mirror) unbind(name string) {
	delete(m.bound, name)
	delete(m.conflicts, name)
	if !m.dirty && m.cluster != nil {
		if _, ok := m.cluster.Placement(name); ok {
			m.cluster.Remove(name)
		}
	}
}

// place adds a binding to the current model (nothing to do while it must be rebuilt).
func (m *Mirror) place(name string, b binding) {
	if m.dirty || m.cluster == nil {
		return
	}
	if err := m.placeOn(m.cluster, b); err != nil {
		m.conflicts[name] = err.Error()
		m.opts.Log.Warn("bound pod left out of the model", "pod", name, "err", err)
		return
	}
	delete(m.conflicts, name)
}

func (m *Mirror) placeOn(c *sim.Cluster, b binding) error {
	i, ok := c.NodeIndex(b.node)
	if !ok {
		return fmt.Errorf("node %s is not in the model", b.node)
	}
	gpus := b.gpus
	if b.noIndex {
		if gpus, ok = c.TightestGPUs(b.task, i); !ok {
			return fmt.Errorf("no GPUs left on node %s for a pod without %s", b.node, AnnotGPUIndex)
		}
	}
	return c.Place(b.task, sim.Choice{Node: i, GPUs: gpus})
}

// current returns the model, rebuilt from nodes, bound and assumed pods when it is stale;
// assumptions past their TTL are dropped first. The caller holds mu.
func (m *Mirror) current() (*sim.Cluster, error) {
	now := time.Now()
	for name, a := range m.assumed {
		if now.Sub(a.at) > m.opts.AssumeTTL {
			delete(m.assumed, name)
			if !m.dirty && m.cluster != nil {
				m.cluster.Remove(name)
			}
		}
	}
	if !m.dirty && m.cluster != nil {
		return m.cluster, nil
	}
	names := make([]string, 0, len(m.nodes))
	for n := range m.nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	nodes := make([]sim.Node, len(names))
	for k, n := range names {
		nodes[k] = m.nodes[n]
	}
	c, err := sim.NewCluster(nodes, m.opts.Model)
	if err != nil {
		return nil, fmt.Errorf("kube: node objects: %w", err)
	}
	if err := c.SetTieOrder(sim.SeededTieOrder(len(nodes), m.opts.TieSeed)); err != nil {
		return nil, err
	}
	clear(m.conflicts)
	for _, name := range sortedKeys(m.bound) {
		if err := m.placeOn(c, m.bound[name]); err != nil {
			m.conflicts[name] = err.Error()
		}
	}
	for _, name := range sortedKeys(m.assumed) {
		if err := m.placeOn(c, m.assumed[name].binding); err != nil {
			delete(m.assumed, name)
		}
	}
	m.cluster, m.dirty = c, false
	return c, nil
}

func sortedKeys[V any](mp map[string]V) []string {
	out := make([]string, 0, len(mp))
	for k := range mp {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Do runs f on the up-to-date model under the mirror's lock. f may read the model and call
// the Txn's methods; it must not keep c.
func (m *Mirror) Do(f func(c *sim.Cluster, tx Txn) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.current()
	if err != nil {
		return err
	}
	return f(c, Txn{m: m, c: c})
}

// Txn is the mirror's write access inside Do.
type Txn struct {
	m *Mirror
	c *sim.Cluster
}

// Assumed returns the placement assumed for this pod (same UID), if any.
func (tx Txn) Assumed(pod *corev1.Pod) (sim.Choice, bool) {
	a, ok := tx.m.assumed[TaskName(pod)]
	if !ok || a.uid != pod.UID {
		return sim.Choice{}, false
	}
	i, ok := tx.c.NodeIndex(a.node)
	return sim.Choice{Node: i, GPUs: a.gpus}, ok
}

// BoundTo is the node this pod (same UID) is bound to, if the informers have seen it bound.
func (tx Txn) BoundTo(pod *corev1.Pod) (string, bool) {
	b, ok := tx.m.bound[TaskName(pod)]
	if !ok || b.uid != pod.UID {
		return "", false
	}
	return b.node, true
}

// Assume places a decided, not yet bound pod in the model, replacing an earlier assumption
// for the same pod.
func (tx Txn) Assume(pod *corev1.Pod, t sim.Task, ch sim.Choice) error {
	name := TaskName(pod)
	tx.Forget(pod)
	if b, ok := tx.m.bound[name]; ok {
		return fmt.Errorf("pod %s is already bound to %s", name, b.node)
	}
	if err := tx.c.Place(t, ch); err != nil {
		return err
	}
	tx.m.assumed[name] = assumption{binding: binding{uid: pod.UID, task: t, node: tx.c.Node(ch.Node).Name, gpus: ch.GPUs}, at: time.Now()}
	return nil
}

// Forget drops the pod's assumption (a bind that failed).
func (tx Txn) Forget(pod *corev1.Pod) {
	name := TaskName(pod)
	if a, ok := tx.m.assumed[name]; ok && a.uid == pod.UID {
		delete(tx.m.assumed, name)
		tx.c.Remove(name)
	}
}

// Pending lists the pods not yet bound, in name order.
func (tx Txn) Pending() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(tx.m.pending))
	for _, name := range sortedKeys(tx.m.pending) {
		out = append(out, tx.m.pending[name])
	}
	return out
}

// Pod returns the pod object of a task in the model.
func (tx Txn) Pod(task string) (*corev1.Pod, bool) {
	p, ok := tx.m.podByName[task]
	return p, ok
}

// Conflicts lists the bound pods the model could not hold, with why.
func (tx Txn) Conflicts() map[string]string { return maps.Clone(tx.m.conflicts) }
