package finetune

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/nn"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Files of a resumable checkpoint besides model.ot and manifest.json.
const (
	optimFile = "optim.ot"
	stateFile = "state.json"
	// checkpointsDir holds the resumable checkpoints under the run directory, one folder per
	// update count; only the newest complete one is kept.
	checkpointsDir = "checkpoints"
)

// slotState is an environment copy's episode as a checkpoint stores it.
type slotState struct {
	Draw    Draw    `json:"draw"`
	Actions []int32 `json:"actions"`
}

// runState is everything besides the weights and Adam's moments that decides the rest of a
// run: with it a resumed run takes exactly the steps an uninterrupted one would have taken.
type runState struct {
	Update   int         `json:"update"` // updates completed
	EnvSteps int64       `json:"env_steps"`
	RNG      []byte      `json:"rng"` // the run's PCG state
	Slots    []slotState `json:"slots"`
	Evals    []evalPoint `json:"evals"`
	Seconds  float64     `json:"seconds"` // wall time spent before this checkpoint

	// WorkerRNG is each rollout worker's PCG state (finetune.rollout_workers > 0).
	WorkerRNG [][]byte `json:"worker_rng,omitempty"`
}

// evalPoint is a held-out evaluation during training.
type evalPoint struct {
	Update   int     `json:"update"`
	EnvSteps int64   `json:"env_steps"`
	Held     heldOut `json:"held_out"`
}

// saveCheckpoint writes a resumable checkpoint for st into the run directory under a new
// folder, manifest last, then removes older ones; a kill at any point leaves the previous
// checkpoint or the new one complete.
// write adds the model, optimiser state and manifest (last) to the folder.
func saveCheckpoint(out string, st runState, write func(dir string) error) error {
	dir := filepath.Join(out, checkpointsDir, fmt.Sprintf("%08d", st.Update))
	d, err := atomicfile.CreateDir(dir, true)
	if err != nil {
		return err
	}
	defer d.Abort()
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.Tmp, stateFile), data, 0o644); err != nil {
		return err
	}
	if err := write(d.Tmp); err != nil {
		return err
	}
	if err := d.Commit(); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(out, checkpointsDir))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != filepath.Base(dir) && !strings.HasPrefix(e.Name(), ".") {
			if err := os.RemoveAll(filepath.Join(out, checkpointsDir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// latestCheckpoint is the newest checkpoint folder of a run directory with a manifest whose
// files verify, or "" when there is none.
func latestCheckpoint(out string) (string, error) {
	entries, err := os.ReadDir(filepath.Join(out, checkpointsDir))
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	for i := len(names) - 1; i >= 0; i-- {
		dir := filepath.Join(out, checkpointsDir, names[i])
		if _, err := checkpoint.Read(dir); err == nil {
			return dir, nil
		}
	}
	return "", nil
}

// readState reads a checkpoint folder's run state.
func readState(dir string, st *runState) error {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, st); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return nil
}

// restoreAdam loads a checkpoint folder's optimiser state into opt.
func restoreAdam(dir string, opt *nn.Adam, dev gotch.Device) error {
	saved, err := ts.LoadMultiWithDevice(filepath.Join(dir, optimFile), dev)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, optimFile), err)
	}
	if err := opt.Restore(saved); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, optimFile), err)
	}
	return nil
}

// resume continues the run in out from its newest checkpoint, if any: weights and optimiser
// into m and opt, episodes rebuilt in pl by replaying their actions, the run record cut back
// to the checkpoint. With no checkpoint it returns a zero state and a nil PCG.
func resume(out string, m *models, opt *nn.Adam, pl *pool) (*recorder, runState, *rand.PCG, error) {
	var st runState
	dir, err := latestCheckpoint(out)
	if err != nil || dir == "" {
		rec, err2 := openRecord(out, 0)
		return rec, st, nil, errors.Join(err, err2)
	}
	if err := readState(dir, &st); err != nil {
		return nil, st, nil, err
	}
	if len(st.Slots) != len(pl.slots) {
		return nil, st, nil, fmt.Errorf("%s: %d environment copies, finetune.num_envs is %d", dir, len(st.Slots), len(pl.slots))
	}
	pcg := &rand.PCG{}
	if err := pcg.UnmarshalBinary(st.RNG); err != nil {
		return nil, st, nil, fmt.Errorf("%s: field rng: %w", filepath.Join(dir, stateFile), err)
	}
	if err := m.restore(dir, opt); err != nil {
		return nil, st, nil, err
	}
	if err := pl.parallel(func(i int, s *slot) error {
		return pl.start(s, st.Slots[i].Draw, st.Slots[i].Actions)
	}); err != nil {
		return nil, st, nil, fmt.Errorf("%s: %w", dir, err)
	}
	rec, err := openRecord(out, st.Update)
	return rec, st, pcg, err
}
