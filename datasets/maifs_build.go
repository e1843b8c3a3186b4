package datasets

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/digest"
	"github.com/schedrl/schedrl/internal/inputfile"
	"github.com/schedrl/schedrl/jobs"
)

// MAIFSBuildOptions configures BuildMAIFS.
type MAIFSBuildOptions struct {
	Logs  string // glob of the fungible world's decision logs (schedrl jobs --servers-gpus N --log)
	Out   string // dataset directory
	Force bool   // replace an existing Out
	// Throughputs, Profiles and Mapping are the tables the speed model is built from; each log's
	// header must name files with the same sha256.
	Throughputs, Profiles, Mapping string
	// ValSeeds: the logs of workloads drawn with these seeds go to the validation split, the
	// others to training.
	ValSeeds []uint64
	Every    int // keep every Every-th decision point of each log, the first always
	Options  env.MAIFSOptions
}

// MAIFSBuildOf is the build the maifs section describes (its tables, validation seeds, every
// and environment) of the logs matching logs into out.
func MAIFSBuildOf(c config.MAIFSConfig, logs, out string, force bool) (MAIFSBuildOptions, error) {
	val, err := config.ParseSeeds(c.ValSeeds)
	if err != nil {
		return MAIFSBuildOptions{}, fmt.Errorf("maifs.val_seeds: %w", err)
	}
	return MAIFSBuildOptions{Logs: logs, Out: out, Force: force, Throughputs: c.Throughputs, Profiles: c.Profiles, Mapping: c.Mapping,
		ValSeeds: val, Every: c.Every,
		Options: MAIFSOptionsOf(c)}, nil
}

// MAIFSWorld is the fungible world the maifs section names.
func MAIFSWorld(c config.MAIFSConfig) fungible.WorldSpec {
	return fungible.WorldSpec{Cluster: c.Cluster, ServerGPUs: c.ServerGPUs, Throughputs: c.Throughputs, Profiles: c.Profiles, Mapping: c.Mapping}
}

// MAIFSOptionsOf is the multi-agent environment the maifs section names.
func MAIFSOptionsOf(c config.MAIFSConfig) env.MAIFSOptions {
	return env.MAIFSOptions{Window: c.Window, WindowOrder: c.WindowOrder, Partners: c.Partners, FixedDemand: c.FixedDemand, MakespanWeight: c.MakespanWeight}
}

// MAIFSBuildStats reports what BuildMAIFS did.
type MAIFSBuildStats struct {
	Logs, Points, Rows int
}

// BuildMAIFS rebuilds every logged round of every log as a decision point of env.MAIFS, with
// the expert's labels from the logged allocations and queue (as env.MAIFSRecorder labels an
// expert in process), and writes the maifs-transitions-v1 dataset with train and val splits.
// Each log is first checked (capacity at every round) and its replay must reproduce the logged
// JCTs, so a log from another build, tables or options is refused naming the file. A failed
// build leaves nothing.
func BuildMAIFS(o MAIFSBuildOptions) (*MAIFSManifest, MAIFSBuildStats, error) {
	var stats MAIFSBuildStats
	if o.Every < 1 {
		return nil, stats, fmt.Errorf("every: must be >= 1, got %d", o.Every)
	}
	logs, err := atomicfile.Glob(o.Logs)
	if err != nil {
		return nil, stats, fmt.Errorf("logs %q: %w", o.Logs, err)
	}
	if len(logs) == 0 {
		return nil, stats, fmt.Errorf("logs %q: no file matches", o.Logs)
	}
	sort.Strings(logs)
	m, err := fungible.LoadModel(fungible.WorldSpec{Throughputs: o.Throughputs, Profiles: o.Profiles, Mapping: o.Mapping}, "")
	if err != nil {
		return nil, stats, err
	}
	files := map[string]string{"throughputs": o.Throughputs, "profiles": o.Profiles, "mapping": o.Mapping}
	sums := map[string]string{}
	for name, path := range files {
		if sums[name], _, err = digest.File(path); err != nil {
			return nil, stats, err
		}
	}
	man := MAIFSManifest{Source: map[string]any{}}
	splits := map[string][]env.MAIFSSample{SplitTrain: nil, SplitVal: nil}
	var names []string
	var first *fungible.Log
	var e *env.MAIFS
	for _, path := range logs {
		lg, err := readFungibleLog(path)
		if err != nil {
			return nil, stats, err
		}
		h := lg.Header
		for _, f := range h.Files {
			if want, ok := sums[f.Name]; ok && f.SHA256 != want {
				return nil, stats, fmt.Errorf("%s: its %s (%s) has sha256 %.12s…, %s has %.12s…", path, f.Name, f.Path, f.SHA256, files[f.Name], want)
			}
		}
		if first == nil {
			first = lg
			if e, err = env.NewMAIFS(lg.Cluster(), m, o.Options); err != nil {
				return nil, stats, err
			}
			man.Cluster, man.ServerGPUs, man.Options = h.Cluster, h.ServerGPUs, e.Options()
			man.Source["expert"], man.Source["order"] = h.Rule, h.Order
		} else if !slices.Equal(h.Servers, first.Header.Servers) {
			return nil, stats, fmt.Errorf("%s: its servers are not those of %s (one dataset, one cluster)", path, logs[0])
		}
		samples, err := replayMAIFS(lg, e, o.Every)
		if err != nil {
			return nil, stats, fmt.Errorf("%s: %w", path, err)
		}
		split := SplitTrain
		if slices.Contains(o.ValSeeds, h.Seed) {
			split = SplitVal
		}
		splits[split] = append(splits[split], samples...)
		names = append(names, filepath.Base(path))
		stats.Logs++
		stats.Points += len(samples)
	}
	if len(splits[SplitTrain]) == 0 {
		return nil, stats, fmt.Errorf("logs %q: no decision point for training (every log's seed is a validation seed %v)", o.Logs, o.ValSeeds)
	}
	man.Source["logs"], man.Source["val_seeds"], man.Source["every"] = names, o.ValSeeds, o.Every
	if err := WriteMAIFS(o.Out, man, splits, o.Force); err != nil {
		return nil, stats, err
	}
	written, err := ReadMAIFSManifest(o.Out)
	if err != nil {
		return nil, stats, err
	}
	for _, sp := range written.Splits {
		stats.Rows += int(sp.Rows)
	}
	return written, stats, nil
}

func readFungibleLog(path string) (*fungible.Log, error) {
	f, err := inputfile.Open(path, inputfile.Trace)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lg, err := fungible.ReadLog(f)
	if err == nil {
		err = lg.Check()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return lg, nil
}

// replayMAIFS runs the logged rounds again with a recorder around them: every Every-th round
// becomes a decision point labelled with the logged allocations and queue.
func replayMAIFS(lg *fungible.Log, e *env.MAIFS, every int) ([]env.MAIFSSample, error) {
	rc := fungible.RunConfig{Round: lg.Header.RoundS}
	if lg.Header.Order != "" {
		order, err := jobs.NewPolicy(lg.Header.Order)
		if err != nil {
			return nil, fmt.Errorf("header order: %w", err)
		}
		rc.Order = order
	}
	rec := &env.MAIFSRecorder{Env: e, Rule: lg.ReplayRule(), Every: every}
	rc.Policy = rec
	res, err := fungible.Run(e.Cluster(), e.Model(), lg.Work(), rc)
	if err != nil {
		return nil, err
	}
	if err := lg.Replayed(res); err != nil {
		return nil, err
	}
	return rec.Samples, nil
}
