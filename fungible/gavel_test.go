package fungible

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/jobs"
)

// gavelModel is the speed model of the real data: Gavel's table through GavelTable, Synergy's
// profiles through the vendored mapping.
func gavelModel(t testing.TB) SpeedModel {
	t.Helper()
	tab, err := jobs.LoadThroughputs(repotest.Data("gavel", "simulation_throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	return SpeedModel{Tput: GavelTable(tab), Sens: loadSensitivity(t)}
}

// rawGavel reads one entry of the throughput table straight from the JSON, independently of jobs'
// parser: "null" for alone, a job-type key for a pair.
func rawGavel(t *testing.T, gpuType, key, other string) json.RawMessage {
	t.Helper()
	raw, err := os.ReadFile(repotest.Data("gavel", "simulation_throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	v, ok := doc[gpuType][key][other]
	if !ok {
		t.Fatalf("no %s / %s / %s in the table", gpuType, key, other)
	}
	return v
}

func TestGavelLoneJobSpeedIsTheProductOfItsThreeFactors(t *testing.T) {
	m := gavelModel(t)
	var alone float64
	if err := json.Unmarshal(rawGavel(t, "p100", "('ResNet-50 (batch size 64)', 4)", "null"), &alone); err != nil {
		t.Fatal(err)
	}
	a := Allocation{Job: 1, JobType: res50, GPUType: "p100", Parts: []Part{{0, []int{0, 1}}, {1, []int{2, 3}}}, CPUsPerGPU: 6, MemPerGPU: 125, Partner: NoPartner}
	prof, err := m.Sens.Profile(res50)
	if err != nil {
		t.Fatal(err)
	}
	res, err := prof.Factor(6, 125)
	if err != nil {
		t.Fatal(err)
	}
	if res == 1 {
		t.Fatalf("res50's factor at 6 CPUs and 125 GB is 1: the test would not tell the factor was applied")
	}
	s, err := m.Speed(a, nil)
	if err != nil || !approx(s, alone*res*1) {
		t.Fatalf("speed %g (%v), want Gavel's %g x Synergy's %g x 1", s, err, alone, res)
	}
}

func TestGavelColocatedJobsRunAtThePairedSpeeds(t *testing.T) {
	m := gavelModel(t)
	const other = "ResNet-18 (batch size 256)"
	var pair [2]float64
	if err := json.Unmarshal(rawGavel(t, "v100", "('ResNet-18 (batch size 32)', 1)", "('"+other+"', 1)"), &pair); err != nil {
		t.Fatal(err)
	}
	l := NewLedger(mixCluster(t, "8:0:0"))
	mustDo(t, l, Allocation{Job: 1, JobType: res18, GPUType: "v100", Parts: []Part{{0, []int{5}}}, CPUsPerGPU: 1.5, MemPerGPU: 31.25, Partner: NoPartner})
	mustDo(t, l, Allocation{Job: 2, JobType: other, GPUType: "v100", Parts: []Part{{0, []int{5}}}, CPUsPerGPU: 1.5, MemPerGPU: 31.25, Partner: 1})
	for job, want := range map[int]float64{1: pair[0], 2: pair[1]} {
		a, _ := l.Get(job)
		prof, err := m.Sens.Profile(a.JobType)
		if err != nil {
			t.Fatal(err)
		}
		res, _ := prof.Factor(1.5, 31.25)
		if s, err := m.Held(l, job); err != nil || !approx(s, want*res) {
			t.Errorf("job %d: speed %g (%v), want the measured paired %g x Synergy's %g", job, s, err, want, res)
		}
	}
	// A pair measured [0, 0] cannot share.
	if m.CanShare("v100", res18, "ResNet-18 (batch size 64)", 4) {
		t.Error("ResNet-18 pairs at 4 GPUs are [0, 0] in Gavel's table, yet they may share")
	}
}
