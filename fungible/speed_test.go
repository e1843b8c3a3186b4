package fungible

import (
	"strings"
	"testing"
)

const (
	res18 = "ResNet-18 (batch size 32)"
	res50 = "ResNet-50 (batch size 64)"
	lm    = "LM (batch size 20)"
	a3c   = "A3C"
)

func TestLoneJobSpeedIsTheProductOfItsThreeFactors(t *testing.T) {
	tab := newTable().setAlone("v100", res18, 2, 94.25).setAlone("k80", res18, 2, 11)
	m := SpeedModel{Tput: tab, Sens: loadSensitivity(t)}
	a := Allocation{Job: 1, JobType: res18, GPUType: "v100", Parts: []Part{{0, []int{0}}, {1, []int{3}}}, CPUsPerGPU: 7.5, MemPerGPU: 62.5, Partner: NoPartner}
	f, err := m.Factors(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Gavel: 94.25 steps/s on 2 V100s; Synergy's res18 halfway between 6 CPUs (1.75) and 9 (2.4)
	// at 62.5 GB; alone: 1.
	want := Factors{Throughput: 94.25, Resource: (1.75 + 2.4) / 2, Colocation: 1}
	if !approx(f.Throughput, want.Throughput) || !approx(f.Resource, want.Resource) || f.Colocation != 1 {
		t.Fatalf("factors %+v, want %+v", f, want)
	}
	s, err := m.Speed(a, nil)
	if err != nil || !approx(s, 94.25*(1.75+2.4)/2) {
		t.Fatalf("speed %g (%v), want %g", s, err, 94.25*(1.75+2.4)/2)
	}
	// The flat profile leaves Gavel's number as it is, at any measured CPU and memory.
	flat := Allocation{Job: 2, JobType: a3c, GPUType: "v100", Parts: []Part{{0, []int{1}}}, CPUsPerGPU: 1, MemPerGPU: 20.83, Partner: NoPartner}
	tab.setAlone("v100", a3c, 1, 7.18)
	if s, err := m.Speed(flat, nil); err != nil || s != 7.18 {
		t.Errorf("flat job speed %g (%v), want 7.18", s, err)
	}
}

func TestColocatedJobsRunAtTheirPairedSpeeds(t *testing.T) {
	tab := newTable().setAlone("v100", res50, 1, 4.4).setAlone("v100", lm, 1, 64.7).
		setPair("v100", res50, lm, 1, 3.1, 40.2)
	m := SpeedModel{Tput: tab, Sens: loadSensitivity(t)}
	a := Allocation{Job: 1, JobType: res50, GPUType: "v100", Parts: []Part{{0, []int{0}}}, CPUsPerGPU: 1.5, MemPerGPU: 31.25, Partner: 2}
	b := Allocation{Job: 2, JobType: lm, GPUType: "v100", Parts: []Part{{0, []int{0}}}, CPUsPerGPU: 1.5, MemPerGPU: 31.25, Partner: 1}
	l := NewLedger(mixCluster(t, "8:0:0"))
	b.Partner = NoPartner
	mustDo(t, l, b)
	mustDo(t, l, a)
	sa, err := m.Held(l, 1)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := m.Held(l, 2)
	if err != nil {
		t.Fatal(err)
	}
	// res50 at 1.5 CPUs and 31.25 GB per GPU: bilinear over rows 1, 2 and columns 20.83, 62.5.
	fm := (31.25 - 20.83) / (62.5 - 20.83)
	res50Factor := ((0.1*(1-fm) + 0.4*fm) + (0.1*(1-fm) + 0.74*fm)) / 2
	if !approx(sa, 3.1*res50Factor) || !approx(sb, 40.2) {
		t.Fatalf("paired speeds %g, %g, want %g and %g", sa, sb, 3.1*res50Factor, 40.2)
	}
	f, _ := m.Factors(a, &b)
	if !approx(f.Colocation, 3.1/4.4) || !approx(f.Speed(), sa) {
		t.Errorf("factors %+v: co-location must be paired over alone", f)
	}
	if err := l.Release(2); err != nil {
		t.Fatal(err)
	}
	if s, _ := m.Held(l, 1); !approx(s, 4.4*res50Factor) {
		t.Errorf("after its partner left, job 1 runs at %g, want its speed alone %g", s, 4.4*res50Factor)
	}
}

func TestSpeedNamesWhatIsMissing(t *testing.T) {
	tab := newTable().setAlone("v100", res18, 1, 30).setAlone("v100", res50, 1, 4).setPair("v100", res18, res50, 1, 0, 0)
	m := SpeedModel{Tput: tab, Sens: loadSensitivity(t)}
	a := Allocation{Job: 1, JobType: res18, GPUType: "v100", Parts: []Part{{0, []int{0}}}, CPUsPerGPU: 3, MemPerGPU: 62.5, Partner: NoPartner}
	b := a
	b.Job, b.JobType = 2, res50
	c := a
	c.Job, c.JobType = 3, lm
	unknown := a
	unknown.JobType = "GPT (batch size 1)"
	tab.setAlone("v100", unknown.JobType, 1, 1)
	starved := a
	starved.CPUsPerGPU = 0.5
	for name, tc := range map[string]struct {
		err  error
		want string
	}{
		"cannot share": {second(m.Speed(a, &b)), `"ResNet-18 (batch size 32)" and "ResNet-50 (batch size 64)" cannot share v100 GPUs (measured pair throughput [0, 0])`},
		"no pair":      {second(m.Speed(a, &c)), `no pair throughput for "ResNet-18 (batch size 32)" with "LM (batch size 20)"`},
		"no alone":     {second(m.Speed(c, nil)), `job 3: no throughput for "LM (batch size 20)" on 1 v100 GPUs`},
		"no mapping":   {second(m.Speed(unknown, nil)), `job type "GPT (batch size 1)" has no Synergy mapping`},
		"below grid":   {second(m.Speed(starved, nil)), "0.5 CPUs per GPU is below Synergy's lowest measured 1"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, tc.err, tc.want)
		}
	}
	if m.CanShare("v100", res18, res50, 1) || m.CanShare("v100", res18, lm, 1) {
		t.Error("CanShare true for a [0, 0] pair or a missing one")
	}
}

func second(_ float64, err error) error { return err }
