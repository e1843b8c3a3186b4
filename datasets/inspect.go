package datasets

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/parquet-go/parquet-go"

	"github.com/schedrl/schedrl/env"
)

// Report is what `datasets inspect` prints: counts, schema, reward and action statistics.
type Report struct {
	Dir      string               `json:"dir"`
	Manifest *Manifest            `json:"manifest"`
	Schema   string               `json:"schema"` // the Parquet schema of the first shard
	Spec     env.Spec             `json:"spec"`
	Splits   map[string]SplitStat `json:"splits"`
}

// SplitStat summarises one split's rows.
type SplitStat struct {
	Rows          int64            `json:"rows"`
	Episodes      int64            `json:"episodes"`
	Shards        int64            `json:"shards"`
	Bytes         int64            `json:"bytes"`
	Reward        Stats            `json:"reward"`
	ReturnToGo    Stats            `json:"return_to_go"`
	Feasible      Stats            `json:"feasible_nodes"` // per decision
	TaskKinds     map[string]int64 `json:"task_kinds"`     // cpu, share, N-gpu
	DistinctNodes int              `json:"distinct_nodes"` // nodes the expert ever chose
	TopNodeShare  float64          `json:"top_node_share"` // share of decisions on the most chosen node
	Done          int64            `json:"done"`
}

// Inspect verifies a dataset and scans its rows (without rebuilding observations).
func Inspect(dir string) (*Report, error) {
	d, err := Open(dir)
	if err != nil {
		return nil, err
	}
	spec, err := env.SpecOf(d.Manifest.Env)
	if err != nil {
		return nil, err
	}
	rep := &Report{Dir: dir, Manifest: d.Manifest, Spec: spec, Splits: map[string]SplitStat{}}
	for _, name := range []string{SplitTrain, SplitVal} {
		si := d.Manifest.Splits[name]
		if si == nil {
			continue
		}
		st := SplitStat{Episodes: int64(si.Episodes), Shards: int64(len(si.Shards)), TaskKinds: map[string]int64{}}
		var reward, rtg, feas statsAcc
		nodes := map[int32]int64{}
		for _, sh := range si.Shards {
			st.Bytes += sh.Bytes
			err := scanShard(filepath.Join(dir, filepath.FromSlash(sh.Path)), func(r *Row) {
				st.Rows++
				reward.add(float64(r.Reward))
				rtg.add(float64(r.ReturnToGo))
				feas.add(float64(r.NumFeasible))
				st.TaskKinds[taskOf(*r).Kind()]++
				nodes[r.Action]++
				if r.Done {
					st.Done++
				}
			}, &rep.Schema)
			if err != nil {
				return nil, err
			}
		}
		st.Reward, st.ReturnToGo, st.Feasible = reward.stats(), rtg.stats(), feas.stats()
		st.DistinctNodes = len(nodes)
		var top int64
		for _, n := range nodes {
			top = max(top, n)
		}
		if st.Rows > 0 {
			st.TopNodeShare = float64(top) / float64(st.Rows)
		}
		rep.Splits[name] = st
	}
	return rep, nil
}

// scanShard calls fn for every row of a shard and records its schema once.
func scanShard[T any](path string, fn func(*T), schema *string) (err error) {
	defer malformed(path, &err)
	f, r, err := openShard[T](path)
	if err != nil {
		return err
	}
	defer f.Close()
	defer r.Close()
	if *schema == "" {
		*schema = r.Schema().String()
	}
	buf := make([]T, 1024)
	for {
		n, err := r.Read(buf)
		for i := range n {
			fn(&buf[i])
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
}

// malformed turns a panic of the Parquet decoder into an error naming the shard: parquet-go
// panics on some corrupt pages and footers, and a shard whose manifest checksum was forged to
// match is input like any other. Deferred by every function that decodes shards.
func malformed(path string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: malformed Parquet shard: %v", path, r)
	}
}

// openShard opens a Parquet shard for reading rows of T. parquet.NewGenericReader panics on a
// file it cannot parse, so the file is parsed first (parquet.OpenFile), and a malformed shard
// whose bytes the manifest vouches for is an error naming it rather than a crash.
func openShard[T any](path string) (*os.File, *parquet.GenericReader[T], error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: not a readable Parquet shard: %w", path, err)
	}
	return f, parquet.NewGenericReader[T](pf), nil
}

// Print writes the report for people.
func (rep *Report) Print(w io.Writer) {
	m := rep.Manifest
	fmt.Fprintf(w, "dataset %s\n  schema %s, env %s, feature spec %s, gamma %g\n", rep.Dir, m.SchemaVersion, m.Env, m.FeatureSpec, m.Gamma)
	fmt.Fprintf(w, "  %d rows in %d episodes from %d logs; %d contexts\n", m.Rows, len(m.Episodes), len(m.Logs), len(m.Contexts))
	fmt.Fprintf(w, "  observation: %d node features %v\n    %d task features %v\n    %d global features %v\n",
		len(rep.Spec.Node), rep.Spec.Node, len(rep.Spec.Task), rep.Spec.Task, len(rep.Spec.Global), rep.Spec.Global)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nsplit\trows\tepisodes\tshards\tMB\tbytes/row\treward mean±std [min,max]\treturn-to-go mean\tfeasible nodes mean\tnodes used\ttop node share\ttask kinds")
	for _, name := range []string{SplitTrain, SplitVal} {
		st, ok := rep.Splits[name]
		if !ok {
			continue
		}
		per := 0.0
		if st.Rows > 0 {
			per = float64(st.Bytes) / float64(st.Rows)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t%.1f\t%.3f±%.3f [%.3f,%.3f]\t%.2f\t%.1f\t%d\t%.3f\t%s\n", name, st.Rows, st.Episodes, st.Shards,
			float64(st.Bytes)/1e6, per, st.Reward.Mean, st.Reward.Std, st.Reward.Min, st.Reward.Max, st.ReturnToGo.Mean,
			st.Feasible.Mean, st.DistinctNodes, st.TopNodeShare, kinds(st.TaskKinds))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nepisode return: mean %.2f std %.2f [%.2f, %.2f]\n", m.Return.Mean, m.Return.Std, m.Return.Min, m.Return.Max)
	fmt.Fprintf(w, "\nParquet schema:\n%s\n", rep.Schema)
}

func kinds(k map[string]int64) string {
	names := make([]string, 0, len(k))
	for n := range k {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%d", n, k[n])
	}
	return strings.Join(parts, " ")
}
