package datasets

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/inputfile"
	"github.com/schedrl/schedrl/sim"
)

// episode is one replayed log, ready to write.
type episode struct {
	rows    []Row
	context any // the environment's start, stored as a context file
	log     FileInfo
	failed  int64
	ret     float64 // undiscounted sum of rewards
}

// logFile is an open decision log whose bytes are hashed as they are read, so the manifest
// records exactly what was replayed.
type logFile struct {
	path    string
	f       io.ReadCloser
	sum     hash.Hash
	counted *countingWriter
	lr      *sim.LogReader
}

// openLog opens a log and reads its header, checking it against nodes when given.
func openLog(path string, o BuildOptions, nodes []sim.Node) (*logFile, error) {
	f, err := inputfile.Open(path, inputfile.Trace)
	if err != nil {
		return nil, err
	}
	l := &logFile{path: path, f: f, sum: sha256.New()}
	l.counted = &countingWriter{w: l.sum}
	if l.lr, err = sim.NewLogReader(io.TeeReader(bufio.NewReaderSize(f, 1<<20), l.counted)); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if nodes != nil {
		if err := matchNodes(l.lr.Header, nodes, o.Nodes); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: line 1: %w", path, err)
		}
	}
	return l, nil
}

// info describes the log once it has been read to the end.
func (l *logFile) info() FileInfo {
	return FileInfo{Path: l.path, Bytes: l.counted.n, SHA256: hex.EncodeToString(l.sum.Sum(nil))}
}

func (l *logFile) close() { l.f.Close() }

func init() {
	registerRowEnv(env.PlacementName, rowEnv{
		replay:  replayPlacement,
		options: func(o BuildOptions) any { return o.EnvOptions },
		decodeStart: func(data []byte) (start, error) {
			var ctx env.Context
			if err := json.Unmarshal(data, &ctx); err != nil {
				return nil, err
			}
			return placementStart{ctx}, nil
		},
	})
}

// replayPlacement replays one decision log through the simulator and the placement environment,
// validating every event, and returns its transitions. Errors name the file and line.
func replayPlacement(path string, o BuildOptions, nodes []sim.Node) (*episode, error) {
	l, err := openLog(path, o, nodes)
	if err != nil {
		return nil, err
	}
	defer l.close()
	lr := l.lr
	r, err := sim.NewReplayer(lr.Header)
	if err != nil {
		return nil, fmt.Errorf("%s: line 1: %w", path, err)
	}
	ep := &episode{context: env.PlacementContext(lr.Header, o.EnvOptions)}
	p := env.NewPlacement(r.C, o.EnvOptions)
	arrivedBefore := map[string]int64{}
	var arrived int64
	var mask []bool
	var changes []Change
	for {
		ev, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line := lr.Line()
		// A timed log's start is its decision (checked as a bind), and a completion or a
		// preemption takes the task off its node like a deletion.
		if ev.Type != sim.EvBind && ev.Type != sim.EvStart {
			_, running := r.C.Placement(ev.Task)
			if err := r.Apply(ev); err != nil {
				return nil, fmt.Errorf("%s: line %d: %w", path, line, err)
			}
			switch ev.Type {
			case sim.EvDelete, sim.EvEvict, sim.EvComplete, sim.EvPreempt:
				if running {
					changes = append(changes, Change{Task: ev.Task, Node: -1})
				}
			case sim.EvMigrate:
				pl, _ := r.C.Placement(ev.Task)
				changes = append(changes, Change{Task: ev.Task, Node: int32(pl.Choice.Node), GPUs: int32(pl.Choice.GPUs)})
			case sim.EvArrive:
				t, _ := r.Pending(ev.Task)
				arrivedBefore[ev.Task] = arrived
				arrived += t.TotalGPUMilli()
			case sim.EvFail:
				ep.failed++
			}
			continue
		}
		// A bind is a decision: encode the state just before it, then let the simulator check
		// and apply it.
		t, ok := r.Pending(ev.Task)
		feasible := 0
		if ok {
			feasible = p.Present(t, arrivedBefore[ev.Task])
		}
		before := r.C.ClusterFrag()
		if err := r.Apply(ev); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, line, err)
		}
		pl, _ := r.C.Placement(ev.Task)
		if !p.Mask(pl.Choice.Node) {
			return nil, fmt.Errorf("%s: line %d: task %q on node %s: simulator accepted a placement the environment masks out", path, line, ev.Task, ev.Node)
		}
		mask = mask[:0]
		for i := range r.C.NumNodes() {
			mask = append(mask, p.Mask(i))
		}
		var logProb *float32
		if ev.LogProb != nil {
			v := float32(*ev.LogProb)
			logProb = &v
		}
		ep.rows = append(ep.rows, Row{
			Episode: 0, Step: int32(len(ep.rows)), LogLine: int32(line), TaskID: t.Name,
			TaskCPU: t.CPU, TaskMemory: t.Mem, TaskGPUs: int32(t.NumGPU), TaskGPUMilli: int32(t.GPUMilli),
			TaskGPUSpec: t.Spec(), ArrivedMilli: arrivedBefore[ev.Task],
			Mask: PackMask(nil, mask), NumFeasible: int32(feasible),
			Action: int32(pl.Choice.Node), ActionGPUs: int32(pl.Choice.GPUs),
			Reward:  float32(p.Reward(t, r.C.ClusterFrag()-before)),
			Changes: changes, LogProb: logProb,
		})
		changes = nil
	}
	ep.log = l.info()
	finishEpisode(ep, o.Gamma)
	return ep, nil
}

// finishEpisode marks the last step done and fills the discounted return-to-go.
func finishEpisode(ep *episode, gamma float64) {
	var g float64
	for i := len(ep.rows) - 1; i >= 0; i-- {
		g = float64(ep.rows[i].Reward) + gamma*g
		ep.rows[i].ReturnToGo = float32(g)
		ep.ret += float64(ep.rows[i].Reward)
	}
	if n := len(ep.rows); n > 0 {
		ep.rows[n-1].Done = true
	}
}

// matchNodes checks that a log header lists exactly the given node list, in order.
func matchNodes(h sim.LogHeader, nodes []sim.Node, file string) error {
	got := h.NodesOf()
	if len(got) != len(nodes) {
		return fmt.Errorf("header lists %d nodes, node list %s has %d", len(got), file, len(nodes))
	}
	for i := range got {
		if got[i] != nodes[i] {
			return fmt.Errorf("header node %d %+v differs from node list %s entry %+v", i, got[i], file, nodes[i])
		}
	}
	return nil
}

func sha256Hex(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}
