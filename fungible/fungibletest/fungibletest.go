// Package fungibletest builds the fungible world's measured speed model (Gavel's table and
// Synergy's profiles from data/) for the tests and benchmarks of the packages above fungible.
package fungibletest

import (
	"testing"

	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/jobs"
)

// Model is the speed model the commands use by default.
func Model(t testing.TB) fungible.SpeedModel {
	t.Helper()
	m, err := fungible.LoadModel(fungible.WorldSpec{Throughputs: repotest.Data("gavel", "simulation_throughputs.json"),
		Profiles: repotest.Data("synergy", "profiles.json"), Mapping: repotest.Data("fungible", "gavel_synergy_models.csv")}, "")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Cluster is a V:P:K cluster of 8-GPU servers.
func Cluster(t testing.TB, spec string) fungible.Cluster {
	t.Helper()
	c, err := fungible.NewMixCluster(spec, fungible.ServerGPUs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Work is a generated multi-GPU workload of Gavel's mix.
func Work(t testing.TB, m fungible.SpeedModel, jobsN int, lam float64, seed uint64) []fungible.Job {
	t.Helper()
	w, err := fungible.Generate(m.Tput, m.Sens.JobTypes(), fungible.WorkloadConfig{Jobs: jobsN, Interarrival: lam, MultiGPU: true, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Order is a jobs order policy by name.
func Order(t testing.TB, name string) jobs.Policy {
	t.Helper()
	p, err := jobs.NewPolicy(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
