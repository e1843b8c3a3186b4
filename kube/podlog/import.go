package podlog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/sim"
)

// Snapshot is what a cluster held at one moment: a dump of `kubectl get nodes,pods -o json`
// or a live list.
type Snapshot struct {
	Source string
	Nodes  []corev1.Node
	Pods   []corev1.Pod
}

// ReadDump reads a `kubectl get nodes,pods -o json` dump: a List of Node and Pod objects.
// Errors name the file, the item and, where it reads, the object.
func ReadDump(path string) (Snapshot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Snapshot{}, err
	}
	var list struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return Snapshot{}, fmt.Errorf("%s: not the JSON of `kubectl get nodes,pods -o json`: %w", path, err)
	}
	if list.Kind != "List" && list.Kind != "NodeList" && list.Kind != "PodList" {
		return Snapshot{}, fmt.Errorf("%s: kind %q, want a List of Node and Pod objects (kubectl get nodes,pods -o json)", path, list.Kind)
	}
	s := Snapshot{Source: path}
	for i, raw := range list.Items {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		what := fmt.Sprintf("%s: items[%d]", path, i)
		if err := json.Unmarshal(raw, &head); err == nil && head.Metadata.Name != "" {
			what += fmt.Sprintf(" (%s %s)", head.Kind, strings.TrimPrefix(head.Metadata.Namespace+"/"+head.Metadata.Name, "/"))
		}
		switch head.Kind {
		case "Node":
			var n corev1.Node
			if err := json.Unmarshal(raw, &n); err != nil {
				return Snapshot{}, fmt.Errorf("%s: %w", what, err)
			}
			if n.Name == "" {
				return Snapshot{}, fmt.Errorf("%s: node without metadata.name", what)
			}
			s.Nodes = append(s.Nodes, n)
		case "Pod":
			var p corev1.Pod
			if err := json.Unmarshal(raw, &p); err != nil {
				return Snapshot{}, fmt.Errorf("%s: %w", what, err)
			}
			s.Pods = append(s.Pods, p)
		default:
			return Snapshot{}, fmt.Errorf("%s: kind %q, want Node or Pod", what, head.Kind)
		}
	}
	return s, nil
}

// ListLive lists a cluster's nodes and pods through the API server, each call within timeout.
func ListLive(ctx context.Context, client kubernetes.Interface, source string, timeout time.Duration) (Snapshot, error) {
	s := Snapshot{Source: source}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nodes, err := client.CoreV1().Nodes().List(lctx, metav1.ListOptions{})
	if err != nil {
		return s, fmt.Errorf("%s: list nodes: %w", source, err)
	}
	pctx, cancel2 := context.WithTimeout(ctx, timeout)
	defer cancel2()
	pods, err := client.CoreV1().Pods("").List(pctx, metav1.ListOptions{})
	if err != nil {
		return s, fmt.Errorf("%s: list pods: %w", source, err)
	}
	s.Nodes, s.Pods = nodes.Items, pods.Items
	return s, nil
}

// ImportOptions configure Import.
type ImportOptions struct {
	// Coverage is the share of the imported requests the header's typical shapes cover (0.95).
	Coverage float64
	Meta     map[string]string
	// PodList and NodeList, when set, receive the history as an openb pod list and node list
	// (writeOpenb): the workload fine-tuning and eval resample.
	PodList, NodeList io.Writer
}

// Report says what an import wrote and where the history was incomplete.
type Report struct {
	Nodes, Pods         int
	Binds, Completes    int
	Deletes, Waiting    int
	GPUIndexAssigned    int      // binds whose GPUs come from GPUIndexRule
	NoScheduledTime     []string // bound without a PodScheduled time: bound at their creation
	DeletedBetweenDumps []string // gone from a later dump: deleted at the earlier dump's time
	NoFinishTime        []string // finished without a container finish time: at their dump's time
	// Refused are the binds the model refuses (a GPU model or share the scheduler did not
	// honour: kube-scheduler reads neither annotation): the pod stays waiting in the log.
	Refused []string
	// Openb says how the history became the openb lists (zero without PodList and NodeList).
	Openb OpenbReport
}

// Incomplete is the number of pods whose history had a gap the import filled by its rules.
func (r Report) Incomplete() int {
	return len(r.NoScheduledTime) + len(r.DeletedBetweenDumps) + len(r.NoFinishTime) + len(r.Refused)
}

// Event ranks at one instant: departures first (the engine frees capacity before it starts
// work), then arrivals, then binds; a pod's own departure at the instant of its arrival or
// bind comes after them.
const (
	rankEnd = iota
	rankArrive
	rankBind
	rankOwnEnd
)

type importEvent struct {
	at    time.Time
	rank  int
	rv    uint64 // the pod's resourceVersion: its last write's order, a tie-break within a second
	task  string
	uid   string
	typ   string
	req   sim.Task
	node  string
	gpus  *sim.GPUSet
	final bool // complete (containers done) rather than delete
}

// history is one pod (by UID) across the snapshots.
type history struct {
	pod         *corev1.Pod
	first, last int
}

// Import writes the decision log of what the snapshots' scheduler did (docs/decision-log.md,
// "Importing a cluster's history"): creation → arrive, PodScheduled time and nodeName → bind,
// containers' last finish → complete, deletion (or absence from a later snapshot) → delete.
// Snapshots are in the order they were taken. Bad input (a malformed pod, a pod bound to a node
// no snapshot lists, times that go back, a pod that reappears) is an error naming the object;
// nothing is written to w unless the whole log replays.
func Import(snaps []Snapshot, w io.Writer, opts ImportOptions) (Report, error) {
	var rep Report
	if len(snaps) == 0 {
		return rep, fmt.Errorf("no dumps: give --dump FILE or --kubeconfig FILE")
	}
	if opts.Coverage <= 0 {
		opts.Coverage = 0.95
	}
	nodes := map[string]corev1.Node{}
	hist := map[string]*history{}
	var order []string
	snapTime := make([]time.Time, len(snaps))
	for k, s := range snaps {
		for _, n := range s.Nodes {
			if _, err := kube.NodeOf(&n); err != nil {
				return rep, fmt.Errorf("%s: %w", s.Source, err)
			}
			nodes[n.Name] = n
			snapTime[k] = later(snapTime[k], n.CreationTimestamp.Time)
		}
		for i := range s.Pods {
			p := &s.Pods[i]
			name := kube.TaskName(p)
			if p.Name == "" || p.UID == "" || p.CreationTimestamp.IsZero() {
				return rep, fmt.Errorf("%s: pod %q: metadata.name, uid and creationTimestamp are required", s.Source, name)
			}
			for _, t := range podTimes(p) {
				snapTime[k] = later(snapTime[k], t)
			}
			uid := string(p.UID)
			h, ok := hist[uid]
			if !ok {
				hist[uid] = &history{pod: p, first: k, last: k}
				order = append(order, uid)
				continue
			}
			old := h.pod
			switch {
			case h.last != k-1:
				return rep, fmt.Errorf("%s: pod %s (uid %s) is in %s, missing from %s and back here: give the dumps in the order they were taken",
					s.Source, name, uid, snaps[h.last].Source, snaps[h.last+1].Source)
			case !old.CreationTimestamp.Equal(&p.CreationTimestamp):
				return rep, fmt.Errorf("%s: pod %s: created at %s here, at %s in %s", s.Source, name,
					stamp(p.CreationTimestamp.Time), stamp(old.CreationTimestamp.Time), snaps[h.last].Source)
			case old.Spec.NodeName != "" && p.Spec.NodeName != old.Spec.NodeName:
				return rep, fmt.Errorf("%s: pod %s: bound to %q here, to %s in the earlier %s: the clock goes back (dumps out of order?)",
					s.Source, name, p.Spec.NodeName, old.Spec.NodeName, snaps[h.last].Source)
			}
			h.pod, h.last = p, k
		}
	}
	var events []importEvent
	var tasks []sim.Task
	lastSnap := len(snaps) - 1
	for _, uid := range order {
		h := hist[uid]
		p := h.pod
		name := kube.TaskName(p)
		src := snaps[h.last].Source
		t, err := kube.TaskOf(p)
		if err != nil {
			return rep, fmt.Errorf("%s: pod %s: %w", src, name, err)
		}
		tasks = append(tasks, t)
		rv, _ := strconv.ParseUint(p.ResourceVersion, 10, 64)
		created := p.CreationTimestamp.Time
		events = append(events, importEvent{at: created, rank: rankArrive, rv: rv, task: name, uid: uid, typ: sim.EvArrive, req: t})
		own := created
		bound := p.Spec.NodeName != ""
		if bound {
			if _, ok := nodes[p.Spec.NodeName]; !ok {
				return rep, fmt.Errorf("%s: pod %s: bound to node %s, which no dump lists", src, name, p.Spec.NodeName)
			}
			gpus, err := GPUs(p)
			if err != nil {
				return rep, fmt.Errorf("%s: pod %s: %w", src, name, err)
			}
			at := scheduledAt(p)
			if at.IsZero() {
				at = created
				rep.NoScheduledTime = append(rep.NoScheduledTime, name)
			}
			if at.Before(created) {
				return rep, fmt.Errorf("%s: pod %s: scheduled at %s, before it was created at %s: the clock goes back", src, name, stamp(at), stamp(created))
			}
			events = append(events, importEvent{at: at, rank: rankBind, rv: rv, task: name, uid: uid, typ: sim.EvBind, node: p.Spec.NodeName, gpus: gpus})
			own = at
		}
		end := importEvent{rv: rv, task: name, uid: uid, typ: sim.EvDelete}
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			end.at, end.final = finishedAt(p), bound
			if end.at.IsZero() {
				end.at = later(snapTime[h.last], own)
				rep.NoFinishTime = append(rep.NoFinishTime, name)
			}
		case p.DeletionTimestamp != nil:
			end.at = p.DeletionTimestamp.Time
		case h.last < lastSnap:
			// Gone before the next dump: it was there at this dump's time, so deleting it then
			// is the earliest the history allows (more room than the cluster had, never less).
			end.at = later(snapTime[h.last], own)
			rep.DeletedBetweenDumps = append(rep.DeletedBetweenDumps, name)
		default:
			if bound {
				rep.Binds++
			} else {
				rep.Waiting++
			}
			continue
		}
		if end.at.Before(own) {
			return rep, fmt.Errorf("%s: pod %s: ends at %s, before it was %s at %s: the clock goes back", src, name, stamp(end.at), map[bool]string{true: "bound", false: "created"}[bound], stamp(own))
		}
		end.rank = rankEnd
		if end.at.Equal(own) {
			end.rank = rankOwnEnd
		}
		if bound {
			rep.Binds++
		}
		if end.final {
			rep.Completes++
		} else {
			rep.Deletes++
		}
		events = append(events, end)
	}
	slices.SortStableFunc(events, func(a, b importEvent) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		if a.rv != b.rv {
			return cmpU(a.rv, b.rv)
		}
		return strings.Compare(a.task, b.task)
	})
	var nodeList []corev1.Node
	for _, n := range nodes {
		nodeList = append(nodeList, n)
	}
	var sources []string
	for _, s := range snaps {
		sources = append(sources, s.Source)
	}
	meta := map[string]string{}
	for k, v := range opts.Meta {
		meta[k] = v
	}
	epoch := time.Time{}
	if len(events) > 0 {
		epoch = events[0].at
	}
	meta["protocol"] = "kube-import"
	meta["sources"] = strings.Join(sources, ",")
	meta[MetaEpoch] = epoch.UTC().Format(time.RFC3339Nano)
	meta[MetaGPUIndex] = GPUIndexRule
	meta["no_scheduled_time"] = strconv.Itoa(len(rep.NoScheduledTime))
	meta["deleted_between_dumps"] = strconv.Itoa(len(rep.DeletedBetweenDumps))
	meta["no_finish_time"] = strconv.Itoa(len(rep.NoFinishTime))
	model, err := sim.TypicalShapes(tasks, opts.Coverage)
	if err != nil {
		model = nil // no GPU requests to shape the measure: the header leaves typical_shapes out
	}
	h, err := Header(nodeList, model, nil, meta)
	if err != nil {
		return rep, err
	}
	rep.Nodes, rep.Pods = len(h.Nodes), len(order)
	var buf bytes.Buffer
	rec, err := NewRecorder(&buf, h, epoch)
	if err != nil {
		return rep, err
	}
	byTask := map[string]*corev1.Pod{} // the log's task names (name#2 for a reused name)
	for _, ev := range events {
		switch ev.typ {
		case sim.EvArrive:
			if err = rec.Arrive(ev.at, ev.uid, ev.task, ev.req); err == nil {
				byTask[rec.tasks[ev.uid].name] = hist[ev.uid].pod
			}
		case sim.EvBind:
			if berr := rec.Bind(ev.at, ev.uid, ev.node, ev.gpus, sim.EvBind); berr != nil {
				rep.Refused = append(rep.Refused, berr.Error())
				rep.Binds--
			}
		default:
			err = rec.End(ev.at, ev.uid, ev.final)
		}
		if err != nil {
			return rep, err
		}
	}
	if err := rec.Flush(); err != nil {
		return rep, err
	}
	rep.GPUIndexAssigned = rec.Assigned
	if opts.PodList != nil || opts.NodeList != nil {
		end := epoch
		for _, t := range snapTime {
			end = later(end, t)
		}
		if rep.Openb, err = writeOpenb(buf.Bytes(), end.Sub(epoch).Seconds(), byTask, opts.PodList, opts.NodeList); err != nil {
			return rep, err
		}
	}
	_, err = w.Write(buf.Bytes())
	return rep, err
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// scheduledAt is when the pod's PodScheduled condition became true (zero when not recorded).
func scheduledAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// finishedAt is the last finish time of the pod's terminated containers (zero when none).
func finishedAt(p *corev1.Pod) time.Time {
	var t time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated != nil {
			t = later(t, cs.State.Terminated.FinishedAt.Time)
		}
	}
	return t
}

// podTimes are the timestamps a pod carries (for a snapshot's time: its latest).
func podTimes(p *corev1.Pod) []time.Time {
	out := []time.Time{p.CreationTimestamp.Time}
	for _, c := range p.Status.Conditions {
		out = append(out, c.LastTransitionTime.Time)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated != nil {
			out = append(out, cs.State.Terminated.FinishedAt.Time)
		}
		if cs.State.Running != nil {
			out = append(out, cs.State.Running.StartedAt.Time)
		}
	}
	return out
}
