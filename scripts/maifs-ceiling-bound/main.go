// Command maifs-ceiling-bound prints fungible.LowerBound, the floor no schedule of the fungible
// world goes below, for generated workloads on a cluster: one JSON line per workload and seed
// (average JCT and makespan in seconds), the workloads drawn exactly as `schedrl eval --timed
// fungible --generate` draws them. scripts/maifs-ceiling-table.sh reads it.
//
//	go run ./scripts/maifs-ceiling-bound --cluster 36:36:36 --seeds 101-105 jobs=300,lam=1200,multigpu ...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/schedrl/schedrl/fungible"
)

func main() {
	cluster := flag.String("cluster", "36:36:36", "V100:P100:K80 GPUs")
	serverGPUs := flag.Int("servers-gpus", 8, "GPUs per server")
	seeds := flag.String("seeds", "101-105", "seeds, FIRST-LAST")
	throughputs := flag.String("throughputs", "data/gavel/simulation_throughputs.json", "Gavel's throughput table")
	profiles := flag.String("profiles", "data/synergy/profiles.json", "Synergy's profiles")
	mapping := flag.String("mapping", "data/fungible/gavel_synergy_models.csv", "Gavel's job types to Synergy's models")
	noSharing := flag.Bool("no-sharing", false, "bound only the schedules that never put two jobs on the same GPUs")
	flag.Parse()
	if err := run(*cluster, *serverGPUs, *seeds, *throughputs, *profiles, *mapping, !*noSharing, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "schedrl: maifs-ceiling-bound:", err)
		os.Exit(1)
	}
}

func run(cluster string, serverGPUs int, seeds, throughputs, profiles, mapping string, share bool, specs []string) error {
	if len(specs) == 0 {
		return fmt.Errorf("no workload: give at least one jobs=N,lam=S[,multigpu]")
	}
	first, last, ok := strings.Cut(seeds, "-")
	if !ok {
		last = first
	}
	lo, err1 := strconv.ParseUint(first, 10, 64)
	hi, err2 := strconv.ParseUint(last, 10, 64)
	if err1 != nil || err2 != nil || hi < lo {
		return fmt.Errorf("--seeds %q: want FIRST-LAST, FIRST <= LAST", seeds)
	}
	w, err := fungible.LoadWorld(fungible.WorldSpec{Cluster: cluster, ServerGPUs: serverGPUs, Throughputs: throughputs,
		Profiles: profiles, Mapping: mapping}, "--")
	if err != nil {
		return err
	}
	c, m := w.Cluster, w.Model
	enc := json.NewEncoder(os.Stdout)
	for _, spec := range specs {
		cfg, err := fungible.ParseWorkloadSpec(spec)
		if err != nil {
			return fmt.Errorf("workload %q: %w", spec, err)
		}
		for seed := lo; seed <= hi; seed++ {
			cfg.Seed = seed
			work, err := fungible.Generate(m.Tput, m.Sens.JobTypes(), cfg)
			if err != nil {
				return fmt.Errorf("workload %q seed %d: %w", spec, seed, err)
			}
			b, err := fungible.LowerBound(c, m, work, share)
			if err != nil {
				return fmt.Errorf("workload %q seed %d: %w", spec, seed, err)
			}
			if err := enc.Encode(map[string]any{"workload": spec, "seed": seed, "sharing": share, "avg_jct_s": b.AvgJCT, "makespan_s": b.Makespan}); err != nil {
				return err
			}
		}
	}
	return nil
}
