package datasets

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/sim"
)

// Dataset is an opened, verified dataset directory. Its readers share node-scoring caches, so
// use one Dataset per goroutine (Batches parallelises internally).
type Dataset struct {
	Dir      string
	Manifest *Manifest
	starts   map[string]start
	caches   []map[string]*env.ScoreCache // per reader goroutine, per context
	maxNodes int
}

// start is an episode's starting point decoded from its context file: it opens the
// environment that rebuilds the episode's observations.
type start interface {
	// candidates is the most candidates a decision of the episode can have.
	candidates() int
	open(cache *env.ScoreCache) (rebuilder, error)
}

// rebuilder replays an episode's stored rows through its environment.
type rebuilder interface {
	// skip applies row r's changes and action without encoding the decision.
	skip(r Row) error
	// observe applies r's changes and encodes the decision r is about into obs.
	observe(r Row, obs *env.Observation) error
	// act applies r's action after observe.
	act(r Row) error
}

// Open reads the manifest, checks every shard and context file against it (size and sha256) and
// loads the episode contexts. A changed or truncated file is an error.
func Open(dir string) (*Dataset, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	spec, err := env.SpecOf(m.Env)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", dir, err)
	}
	if m.FeatureSpec != spec.Version {
		return nil, fmt.Errorf("dataset %s: env %s feature spec %s, this build encodes %s %s", dir, m.Env, m.FeatureSpec, spec.Env, spec.Version)
	}
	if err := m.Verify(dir); err != nil {
		return nil, err
	}
	d := &Dataset{Dir: dir, Manifest: m, starts: map[string]start{}}
	for _, c := range m.Contexts {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(c.Path)))
		if err != nil {
			return nil, err
		}
		st, err := decodeStart(m.Env, data)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %s: %w", dir, c.Path, err)
		}
		d.starts[c.Path] = st
		d.maxNodes = max(d.maxNodes, st.candidates())
	}
	d.reserveCaches(1)
	for _, ep := range m.Episodes {
		if _, ok := d.starts[ep.Context]; !ok {
			return nil, fmt.Errorf("dataset %s: episode %d names context %q that the manifest does not list", dir, ep.ID, ep.Context)
		}
	}
	return d, nil
}

// OpenEnv opens a dataset that must hold transitions of the named environment: a placement
// reader refuses a defrag dataset and the other way round.
func OpenEnv(dir, envName string) (*Dataset, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if m.Env != envName {
		return nil, fmt.Errorf("dataset %s holds %s transitions (feature spec %s), %s ones are wanted here", dir, m.Env, m.FeatureSpec, envName)
	}
	return Open(dir)
}

// decodeStart decodes a context file of the named environment.
func decodeStart(envName string, data []byte) (start, error) {
	renv, ok := rowEnvs[envName]
	if !ok {
		return nil, fmt.Errorf("no episode rebuild for environment %q", envName)
	}
	return renv.decodeStart(data)
}

// reserveCaches makes sure n reader goroutines have their own caches.
func (d *Dataset) reserveCaches(n int) {
	for len(d.caches) < n {
		m := map[string]*env.ScoreCache{}
		for path := range d.starts {
			m[path] = env.NewScoreCache()
		}
		d.caches = append(d.caches, m)
	}
}

// Episodes lists the episodes of a split.
func (d *Dataset) Episodes(split string) []EpisodeInfo {
	var out []EpisodeInfo
	for _, ep := range d.Manifest.Episodes {
		if ep.Split == split {
			out = append(out, ep)
		}
	}
	return out
}

// MaxNodes is the largest cluster of the dataset; batches pad node rows to it.
func (d *Dataset) MaxNodes() int { return d.maxNodes }

// Sample is a stored transition with its observation rebuilt.
type Sample struct {
	Row Row
	Obs env.Observation
}

// ReadEpisode rebuilds every step of an episode in order and calls fn with it; fn must not keep
// the sample, whose buffers are reused.
func (d *Dataset) ReadEpisode(ep EpisodeInfo, fn func(*Sample) error) error {
	cur, err := d.openCursor(ep, 0, ep.Rows, 0)
	if err != nil {
		return err
	}
	defer cur.close()
	for {
		s, err := cur.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(s); err != nil {
			return err
		}
	}
}

// cursor rebuilds the steps [from, to) of one episode.
type cursor struct {
	d        *Dataset
	ep       EpisodeInfo
	env      rebuilder
	rows     *segmentRows
	step, to int64
	sample   Sample
	mask     []bool
}

// openCursor replays the episode's first `from` actions without encoding them, so a chunk in
// the middle of an episode starts from the exact state the expert saw. worker picks the caches.
func (d *Dataset) openCursor(ep EpisodeInfo, from, to int64, worker int) (*cursor, error) {
	rb, err := d.starts[ep.Context].open(d.caches[worker][ep.Context])
	if err != nil {
		return nil, fmt.Errorf("dataset %s: episode %d: %w", d.Dir, ep.ID, err)
	}
	c := &cursor{d: d, ep: ep, env: rb, rows: &segmentRows{dir: d.Dir, segs: ep.Segments}, to: to}
	for c.step < from {
		r, err := c.rows.next()
		if err == nil {
			err = rb.skip(r)
		}
		if err != nil {
			c.close()
			return nil, c.errorf("%v", err)
		}
		c.step++
	}
	return c, nil
}

func (c *cursor) errorf(format string, args ...any) error {
	return fmt.Errorf("dataset %s: episode %d step %d: %s", c.d.Dir, c.ep.ID, c.step, fmt.Sprintf(format, args...))
}

// next rebuilds the next step: the observation as the environment encodes it, checked against
// the stored mask, then the stored action applied.
func (c *cursor) next() (*Sample, error) {
	if c.step >= c.to {
		return nil, io.EOF
	}
	r, err := c.rows.next()
	if err != nil {
		return nil, c.errorf("%v", err)
	}
	if int64(r.Step) != c.step || r.Episode != c.ep.ID {
		return nil, c.errorf("shard row is episode %d step %d", r.Episode, r.Step)
	}
	if err := c.env.observe(r, &c.sample.Obs); err != nil {
		return nil, c.errorf("%v", err)
	}
	if c.mask, err = UnpackMask(c.mask, r.Mask, c.sample.Obs.NumNodes); err != nil {
		return nil, c.errorf("%v", err)
	}
	for i, ok := range c.mask {
		if ok != c.sample.Obs.Mask[i] {
			return nil, c.errorf("stored mask says candidate %d feasible=%v, rebuilt state says %v", i, ok, !ok)
		}
	}
	if err := c.env.act(r); err != nil {
		return nil, c.errorf("stored action: %v", err)
	}
	c.sample.Row = r
	c.step++
	return &c.sample, nil
}

func (c *cursor) close() { c.rows.close() }

// placementStart rebuilds placement episodes: the context's empty cluster, then each row's
// logged changes and placement.
type placementStart struct{ ctx env.Context }

func (s placementStart) candidates() int { return len(s.ctx.Nodes) }

func (s placementStart) open(cache *env.ScoreCache) (rebuilder, error) {
	p, err := s.ctx.NewPlacement()
	if err != nil {
		return nil, err
	}
	p.ShareCache(cache)
	return placementRebuild{p}, nil
}

type placementRebuild struct{ p *env.Placement }

func (b placementRebuild) skip(r Row) error {
	if err := applyChanges(b.p.Cluster(), r.Changes); err != nil {
		return err
	}
	if err := b.p.Cluster().Place(taskOf(r), sim.Choice{Node: int(r.Action), GPUs: sim.GPUSet(r.ActionGPUs)}); err != nil {
		return fmt.Errorf("replaying the stored action: %w", err)
	}
	return nil
}

func (b placementRebuild) observe(r Row, obs *env.Observation) error {
	if err := applyChanges(b.p.Cluster(), r.Changes); err != nil {
		return err
	}
	b.p.Present(taskOf(r), r.ArrivedMilli)
	b.p.Observe(obs)
	return nil
}

func (b placementRebuild) act(r Row) error {
	_, err := b.p.Step(env.Action{Candidate: int(r.Action), GPUs: sim.GPUSet(r.ActionGPUs)})
	return err
}

// applyChanges replays the departures and migrations logged before a decision.
func applyChanges(c *sim.Cluster, changes []Change) error {
	for _, ch := range changes {
		var err error
		if ch.Node < 0 {
			_, err = c.Remove(ch.Task)
		} else {
			err = c.Migrate(ch.Task, sim.Choice{Node: int(ch.Node), GPUs: sim.GPUSet(ch.GPUs)})
		}
		if err != nil {
			return fmt.Errorf("stored change: %w", err)
		}
	}
	return nil
}

// Task is the task the row decides about.
func (r Row) Task() sim.Task { return taskOf(r) }

// ApplyChanges replays onto c the departures and migrations logged before the row's decision.
func (r Row) ApplyChanges(c *sim.Cluster) error { return applyChanges(c, r.Changes) }

// Context is the start state a placement episode replays from (e.g. to score choices on its
// cluster); other environments' episodes are an error.
func (d *Dataset) Context(ep EpisodeInfo) (env.Context, error) {
	s, ok := d.starts[ep.Context].(placementStart)
	if !ok {
		return env.Context{}, fmt.Errorf("dataset %s: episode %d is a %s episode, not a placement one", d.Dir, ep.ID, d.Manifest.Env)
	}
	return s.ctx, nil
}

// taskOf is the task a row decides about.
func taskOf(r Row) sim.Task {
	t := sim.Task{Name: r.TaskID, CPU: r.TaskCPU, Mem: r.TaskMemory, NumGPU: int(r.TaskGPUs), GPUMilli: int64(r.TaskGPUMilli), Deletion: -1}
	for _, s := range strings.Split(r.TaskGPUSpec, "|") {
		if s != "" {
			t.GPUTypes = append(t.GPUTypes, s)
		}
	}
	return t
}

// segmentRows reads an episode's rows across its shard segments.
type segmentRows struct {
	dir  string
	segs []Segment
	seg  int
	left int64
	f    *os.File
	r    *parquet.GenericReader[Row]
	buf  []Row
	pos  int
}

func (s *segmentRows) next() (Row, error) {
	for s.pos == len(s.buf) {
		if s.left == 0 {
			if err := s.openNext(); err != nil {
				return Row{}, err
			}
		}
		n := min(int64(256), s.left)
		if cap(s.buf) < int(n) {
			s.buf = make([]Row, n)
		}
		s.buf = s.buf[:n]
		got, err := s.read()
		if got < int(n) && err == nil {
			err = io.ErrUnexpectedEOF
		}
		if err != nil && !(err == io.EOF && got == int(n)) {
			return Row{}, fmt.Errorf("%s: %w", s.segs[s.seg-1].Shard, err)
		}
		s.buf, s.pos = s.buf[:got], 0
		s.left -= int64(got)
	}
	s.pos++
	return s.buf[s.pos-1], nil
}

// read fills s.buf from the current shard.
func (s *segmentRows) read() (n int, err error) {
	defer malformed(s.segs[s.seg-1].Shard, &err)
	return s.r.Read(s.buf)
}

func (s *segmentRows) openNext() (err error) {
	s.close()
	if s.seg == len(s.segs) {
		return fmt.Errorf("episode has fewer rows than its segments promise")
	}
	seg := s.segs[s.seg]
	s.seg++
	path := filepath.Join(s.dir, filepath.FromSlash(seg.Shard))
	defer malformed(path, &err)
	if s.f, s.r, err = openShard[Row](path); err != nil {
		return err
	}
	if err := s.r.SeekToRow(seg.FirstRow); err != nil {
		return fmt.Errorf("%s: seek to row %d: %w", seg.Shard, seg.FirstRow, err)
	}
	s.left = seg.Rows
	return nil
}

func (s *segmentRows) close() {
	if s.r != nil {
		s.r.Close()
		s.r = nil
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}
