package fungible

import (
	"strings"
	"testing"
)

func TestMixClusterOfEightGPUServers(t *testing.T) {
	c := mixCluster(t, "36:36:36")
	if len(c) != 15 {
		t.Fatalf("%d servers, want 15 (per type four of 8 GPUs and one of 4)", len(c))
	}
	gpus := map[string]int{}
	for _, s := range c {
		gpus[s.GPUType] += s.GPUs
		if s.CPUs != 3*float64(s.GPUs) || s.MemGB != 62.5*float64(s.GPUs) {
			t.Errorf("%s: %d GPUs, %g CPUs, %g GB, want Synergy's 3 CPUs and 62.5 GB per GPU", s.Name, s.GPUs, s.CPUs, s.MemGB)
		}
	}
	if gpus["v100"] != 36 || gpus["p100"] != 36 || gpus["k80"] != 36 {
		t.Fatalf("GPUs by type %v", gpus)
	}
	if last := c[4]; last.Name != "v100-04" || last.GPUs != 4 {
		t.Errorf("fifth server %+v, want v100-04 with the 4 left over", last)
	}
	if fc, fm := c.FairShare("k80"); fc != 3 || fm != 62.5 {
		t.Errorf("fair share (%g, %g)", fc, fm)
	}
	if got := strings.Join(mixCluster(t, "0:8:0").Types(), ","); got != "p100" {
		t.Errorf("types of 0:8:0: %s", got)
	}
}

func TestMixClusterRejectsBadSpecs(t *testing.T) {
	for spec, want := range map[string]string{
		"36:36":    "want V100:P100:K80",
		"36:x:36":  `field 2 (p100) is "x"`,
		"36:-1:36": `field 2 (p100) is "-1"`,
		"0:0:0":    "no GPU",
	} {
		if _, err := NewMixCluster(spec, 8); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", spec, err, want)
		}
	}
	if _, err := NewMixCluster("8:8:8", 0); err == nil || !strings.Contains(err.Error(), "server size 0") {
		t.Errorf("server size 0: %v", err)
	}
}
