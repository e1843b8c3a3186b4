package podlog

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/schedrl/schedrl/sim"
)

// The openb lists' columns, as data/openb writes them and sim.LoadTasks/LoadNodes read them.
var (
	openbPodColumns  = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}
	openbNodeColumns = []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}
)

// UnlabelledModel is the node list's model of a GPU node without the GPU model label: the
// openb list needs one, and no pod that asks for a model is bound there in the log.
const UnlabelledModel = "unlabelled"

// OpenbReport says how the imported history became an openb pod list.
type OpenbReport struct {
	Pods  int // rows of the pod list: every pod of the log
	Nodes int // rows of the node list: the log header's nodes
	// Running and Waiting are the pods still running or waiting at the end of the history:
	// the openb list needs a deletion_time, so theirs is the history's end (Span).
	Running, Waiting int
	// Span is the history's length in seconds: its last dump's time from the first event.
	Span int64
}

// openbPod is one row of the pod list, built from the log's events.
type openbPod struct {
	name                        string
	req                         sim.TaskRecord
	created, scheduled, deleted float64
	bound, ended, completed     bool
}

// writeOpenb writes the history of the decision log (what Import just wrote) as an openb pod
// list and node list: one row per task of the log, in arrival order, with the log's own
// decisions (a bind the model refused is no bind here either). Times are whole seconds from
// the log's first event (rounded down, which keeps every creation <= scheduled <= deletion);
// a pod the history leaves running or waiting gets the history's end as its deletion_time,
// the way the openb list ends its trace. pods maps a log task name to its Pod for the qos and
// pod_phase columns. Either writer may be nil; nothing is written unless both lists are made.
func writeOpenb(log []byte, end float64, pods map[string]*corev1.Pod, podW, nodeW io.Writer) (OpenbReport, error) {
	var rep OpenbReport
	lr, err := sim.NewLogReader(bytes.NewReader(log))
	if err != nil {
		return rep, err
	}
	byName := map[string]*openbPod{}
	var order []*openbPod
	for {
		ev, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rep, err
		}
		at := *ev.Time
		end = math.Max(end, at)
		p := byName[ev.Task]
		switch {
		case ev.Type == sim.EvArrive:
			p = &openbPod{name: ev.Task, req: *ev.Request, created: at}
			byName[ev.Task] = p
			order = append(order, p)
		case p == nil:
			return rep, fmt.Errorf("line %d: %s of pod %s before its arrival", lr.Line(), ev.Type, ev.Task)
		case ev.Type == sim.EvBind || ev.Type == sim.EvStart:
			p.bound, p.scheduled = true, at
		default:
			p.ended, p.completed, p.deleted = true, ev.Type == sim.EvComplete, at
		}
	}
	rep.Span = int64(end)
	var pb, nb bytes.Buffer
	cw := csv.NewWriter(&pb)
	cw.Write(openbPodColumns)
	for _, p := range order {
		if !p.ended {
			p.deleted = end
			if p.bound {
				rep.Running++
			} else {
				rep.Waiting++
			}
		}
		sched := ""
		if p.bound {
			sched = secs(p.scheduled)
		}
		var qos corev1.PodQOSClass
		if pod := pods[p.name]; pod != nil {
			qos = pod.Status.QOSClass
		}
		cw.Write([]string{p.name, i64(p.req.CPU), i64(p.req.Mem), strconv.Itoa(p.req.NumGPU), i64(p.req.GPUMilli), p.req.GPUSpec,
			string(qos), p.phase(pods[p.name]), secs(p.created), secs(p.deleted), sched})
	}
	cw.Flush()
	nw := csv.NewWriter(&nb)
	nw.Write(openbNodeColumns)
	for _, n := range lr.Header.Nodes {
		model := n.Model
		if n.GPUs > 0 && model == "" {
			model = UnlabelledModel
		}
		nw.Write([]string{n.Name, i64(n.CPU), i64(n.Mem), strconv.Itoa(n.GPUs), model})
	}
	nw.Flush()
	if err := errors.Join(cw.Error(), nw.Error()); err != nil {
		return rep, err
	}
	rep.Pods, rep.Nodes = len(order), len(lr.Header.Nodes)
	for _, out := range []struct {
		w    io.Writer
		data []byte
	}{{podW, pb.Bytes()}, {nodeW, nb.Bytes()}} {
		if out.w == nil {
			continue
		}
		if _, err := out.w.Write(out.data); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// phase is the pod_phase column: the pod's own final phase where the log completed it
// (Succeeded or Failed), else what the log says it was at its end: Running once bound (a
// deleted pod was running when it went), Pending before.
func (p *openbPod) phase(pod *corev1.Pod) string {
	switch {
	case p.completed && pod != nil && pod.Status.Phase != "":
		return string(pod.Status.Phase)
	case p.completed:
		return string(corev1.PodSucceeded)
	case p.bound:
		return string(corev1.PodRunning)
	}
	return string(corev1.PodPending)
}

func secs(t float64) string { return strconv.FormatInt(int64(math.Floor(t)), 10) }

func i64(v int64) string { return strconv.FormatInt(v, 10) }
