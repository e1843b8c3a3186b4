package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/sim"
)

// PartSchema and TimedPartSchema name the layouts of a shard's part (arrival protocol, timed
// worlds); the driver refuses any other.
const (
	PartSchema      = "schedrl.eval.part/v1"
	TimedPartSchema = "schedrl.eval.timed-part/v1"
)

// Shard is shard Index of Count: the cells (policy, trace, seed), in job order, whose
// position modulo Count is Index. Dealing cells round-robin keeps shards of equal cost when
// some policies are slower than others.
type Shard struct{ Index, Count int }

// ParseShard reads "I/N" with 0 <= I < N.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || count < 1 || index < 0 || index >= count {
		return Shard{}, fmt.Errorf("shard %q: want I/N with 0 <= I < N", s)
	}
	return Shard{index, count}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Remote runs an evaluation's cells in shards: it returns, in shard order, the parts that
// RunShard gives for shards 0/n ... n-1/n of the same config. local runs shard i in this
// process on the evaluation already prepared (what an in-process executor calls).
type Remote func(ctx context.Context, shards int, local func(ctx context.Context, shard int) ([]byte, error)) ([][]byte, error)

// part is one shard's runs, with what identifies each cell, so that the driver refuses a
// part made from another config or code.
type part struct {
	Schema string     `json:"schema"`
	Shard  int        `json:"shard"`
	Shards int        `json:"shards"`
	Cells  int        `json:"cells"` // of the whole evaluation
	Tune   float64    `json:"tune"`
	Runs   []cellPart `json:"runs"`
}

type cellPart struct {
	Cell   int              `json:"cell"`
	Policy string           `json:"policy"`
	Trace  string           `json:"trace"`
	Run    SeedRun          `json:"run"`
	Curve  []sim.CurvePoint `json:"curve"` // SeedRun leaves it out of metrics.json
}

// RunShard runs one shard's cells of cfg (the arrival protocol, or the timed world of
// cfg.Timed.Kind) and returns its part (JSON). It checks the whole config as Run and RunTimed
// do, so a shard fails on the same bad input as the evaluation.
func RunShard(ctx context.Context, cfg config.EvalConfig, opts Options, sh Shard) ([]byte, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("eval config: %w", err)
	}
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	if cfg.Timed.Kind != "" {
		return runTimedShard(ctx, cfg, opts, sh, log)
	}
	plan, err := prepare(cfg, opts.Resolve, opts.Fetched)
	if err != nil {
		return nil, err
	}
	return plan.shardPart(ctx, sh, log, opts.Progress)
}

// shardPart runs shard sh's cells of the prepared plan and encodes its part.
func (p *plan) shardPart(ctx context.Context, sh Shard, log *slog.Logger, bar bool) ([]byte, error) {
	js := p.jobs()
	mine := shardCells(sh, len(js))
	runs, err := p.runCells(ctx, mine, log, bar)
	if err != nil {
		return nil, err
	}
	pt := part{Schema: PartSchema, Shard: sh.Index, Shards: sh.Count, Cells: len(js), Tune: p.cfg.Tune}
	for _, i := range mine {
		j := js[i]
		pt.Runs = append(pt.Runs, cellPart{Cell: i, Policy: p.refs[j.policy].Raw, Trace: p.traces[j.trace].Name,
			Run: runs[i], Curve: runs[i].Curve})
	}
	return json.Marshal(pt)
}

// merge reads the parts of every shard into the runs in job order, checking that each cell
// is there once and is the cell this plan would run.
func (p *plan) merge(parts [][]byte) ([]SeedRun, error) {
	js := p.jobs()
	runs := make([]SeedRun, len(js))
	seen := make([]bool, len(js))
	for s, data := range parts {
		var pt part
		if err := decodePart(data, PartSchema, &pt); err != nil {
			return nil, fmt.Errorf("part of shard %d/%d: %w", s, len(parts), err)
		}
		switch {
		case pt.Shard != s || pt.Shards != len(parts) || pt.Cells != len(js) || pt.Tune != p.cfg.Tune:
			return nil, fmt.Errorf("part of shard %d/%d: made for shard %d/%d of %d cells at tune %v, want %d cells at tune %v",
				s, len(parts), pt.Shard, pt.Shards, pt.Cells, pt.Tune, len(js), p.cfg.Tune)
		}
		for _, c := range pt.Runs {
			if c.Cell < 0 || c.Cell >= len(js) || c.Cell%len(parts) != s || seen[c.Cell] {
				return nil, fmt.Errorf("part of shard %d/%d: cell %d is not its own or comes twice", s, len(parts), c.Cell)
			}
			j := js[c.Cell]
			if c.Policy != p.refs[j.policy].Raw || c.Trace != p.traces[j.trace].Name || c.Run.Seed != p.seeds[j.seed] {
				return nil, fmt.Errorf("part of shard %d/%d: cell %d is policy %q on trace %q seed %d, want %q on %q seed %d", s, len(parts),
					c.Cell, c.Policy, c.Trace, c.Run.Seed, p.refs[j.policy].Raw, p.traces[j.trace].Name, p.seeds[j.seed])
			}
			c.Run.Curve = c.Curve
			runs[c.Cell], seen[c.Cell] = c.Run, true
		}
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("parts: cell %d (shard %d/%d) is missing", i, i%max(len(parts), 1), len(parts))
		}
	}
	return runs, nil
}

// shardCells are the cells of shard sh among n.
func shardCells(sh Shard, n int) []int {
	var mine []int
	for i := sh.Index; i < n; i += sh.Count {
		mine = append(mine, i)
	}
	return mine
}

// timedPart is one shard's timed runs, with their JCTs and series (which metrics.json leaves
// to jct.csv and series.csv).
type timedPart struct {
	Schema string          `json:"schema"`
	Shard  int             `json:"shard"`
	Shards int             `json:"shards"`
	Cells  int             `json:"cells"`
	Kind   string          `json:"kind"`
	Runs   []timedCellPart `json:"runs"`
}

type timedCellPart struct {
	Cell     int          `json:"cell"`
	Policy   string       `json:"policy"`
	Workload string       `json:"workload"`
	Run      TimedSeedRun `json:"run"`
	JCT      []float64    `json:"jct"`
	Series   []TimedPoint `json:"series"`
}

func runTimedShard(ctx context.Context, cfg config.EvalConfig, opts Options, sh Shard, log *slog.Logger) ([]byte, error) {
	plan, err := prepareTimed(cfg, opts)
	if err != nil {
		return nil, err
	}
	return plan.shardPart(ctx, sh, log, opts.Progress)
}

// shardPart runs shard sh's cells of the prepared timed plan and encodes its part.
func (p *timedPlan) shardPart(ctx context.Context, sh Shard, log *slog.Logger, bar bool) ([]byte, error) {
	mine := shardCells(sh, len(p.cells))
	runs, err := p.runCells(ctx, mine, log, bar)
	if err != nil {
		return nil, err
	}
	pt := timedPart{Schema: TimedPartSchema, Shard: sh.Index, Shards: sh.Count, Cells: len(p.cells), Kind: p.cfg.Timed.Kind}
	for _, i := range mine {
		c := p.cells[i]
		pt.Runs = append(pt.Runs, timedCellPart{Cell: i, Policy: p.policies[c.policy], Workload: p.names[c.workload],
			Run: runs[i], JCT: runs[i].JCT, Series: runs[i].Series})
	}
	return json.Marshal(pt)
}

// merge reads the timed parts of every shard into the runs in cell order, as plan.merge does
// for the arrival protocol.
func (p *timedPlan) merge(parts [][]byte) ([]TimedSeedRun, error) {
	runs := make([]TimedSeedRun, len(p.cells))
	seen := make([]bool, len(p.cells))
	for s, data := range parts {
		var pt timedPart
		if err := decodePart(data, TimedPartSchema, &pt); err != nil {
			return nil, fmt.Errorf("part of shard %d/%d: %w", s, len(parts), err)
		}
		switch {
		case pt.Shard != s || pt.Shards != len(parts) || pt.Cells != len(p.cells) || pt.Kind != p.cfg.Timed.Kind:
			return nil, fmt.Errorf("part of shard %d/%d: made for shard %d/%d of %d %s cells, want %d %s cells",
				s, len(parts), pt.Shard, pt.Shards, pt.Cells, pt.Kind, len(p.cells), p.cfg.Timed.Kind)
		}
		for _, c := range pt.Runs {
			if c.Cell < 0 || c.Cell >= len(p.cells) || c.Cell%len(parts) != s || seen[c.Cell] {
				return nil, fmt.Errorf("part of shard %d/%d: cell %d is not its own or comes twice", s, len(parts), c.Cell)
			}
			want := p.cells[c.Cell]
			if c.Policy != p.policies[want.policy] || c.Workload != p.names[want.workload] || c.Run.Seed != p.seeds[want.seed] {
				return nil, fmt.Errorf("part of shard %d/%d: cell %d is policy %q on workload %q seed %d, want %q on %q seed %d", s, len(parts),
					c.Cell, c.Policy, c.Workload, c.Run.Seed, p.policies[want.policy], p.names[want.workload], p.seeds[want.seed])
			}
			c.Run.JCT, c.Run.Series = c.JCT, c.Series
			runs[c.Cell], seen[c.Cell] = c.Run, true
		}
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("parts: cell %d (shard %d/%d) is missing", i, i%max(len(parts), 1), len(parts))
		}
	}
	return runs, nil
}

// decodePart reads a part of the given schema, refusing unknown fields; the schema is
// checked first, so a part of another layout is named as such.
func decodePart(data []byte, schema string, into any) error {
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	if head.Schema != schema {
		return fmt.Errorf("schema %q, want %q", head.Schema, schema)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// ShardArgs are the eval keys of ec that differ from the defaults, as flags: a default stays
// unsaid, so the pod resolves it against its own image (data/ beside the binary). A list
// item goes in its own flag, CSV-quoted when it holds a comma. The paper overlay is the
// merge's business, not a shard's.
func ShardArgs(ec config.EvalConfig) []string {
	def := config.Default().Eval
	args := []string{"eval", "--no-paper"}
	one := func(flag, v, d string) {
		if v != d && v != config.RepoFile(d) {
			args = append(args, "--"+flag+"="+v)
		}
	}
	list := func(flag string, v, d []string) {
		if slices.Equal(v, d) {
			return
		}
		for _, x := range v {
			if strings.ContainsAny(x, ",\"") {
				x = `"` + strings.ReplaceAll(x, `"`, `""`) + `"`
			}
			args = append(args, "--"+flag+"="+x)
		}
	}
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	list("policies", ec.Policies, def.Policies)
	list("traces", ec.Traces, def.Traces)
	one("seeds", ec.Seeds, def.Seeds)
	one("tune", num(ec.Tune), num(def.Tune))
	one("nodes", ec.Nodes, def.Nodes)
	one("traces-dir", ec.TracesDir, def.TracesDir)
	one("baseline", ec.Baseline, def.Baseline)
	t, dt := ec.Timed, def.Timed
	one("timed", t.Kind, dt.Kind)
	one("cluster", t.Cluster, dt.Cluster)
	one("servers-gpus", t.ServersGPUs, dt.ServersGPUs)
	one("round", num(t.Round), num(dt.Round))
	one("load", num(t.Load), num(dt.Load))
	one("tasks", strconv.Itoa(t.Tasks), strconv.Itoa(dt.Tasks))
	one("cap", num(t.Cap), num(dt.Cap))
	one("warmup", num(t.Warmup), num(dt.Warmup))
	one("queue", t.Queue, dt.Queue)
	// Keys without a flag of their own.
	set := func(key, v, d string) {
		if v != d && v != config.RepoFile(d) {
			args = append(args, "--set", key+"="+v)
		}
	}
	set("eval.timed.throughputs", t.Throughputs, dt.Throughputs)
	set("eval.timed.profiles", t.Profiles, dt.Profiles)
	set("eval.timed.synergy_map", t.SynergyMap, dt.SynergyMap)
	set("eval.timed.series_step", num(t.SeriesStep), num(dt.SeriesStep))
	return args
}
