package fungible

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/sim"
)

// gavelJobTypes are the 26 job types of Gavel's throughput table.
var gavelJobTypes = func() []string {
	out := []string{"A3C", "CycleGAN"}
	for _, b := range []string{"5", "10", "20", "40", "80"} {
		out = append(out, "LM (batch size "+b+")")
	}
	for _, b := range []string{"512", "1024", "2048", "4096", "8192"} {
		out = append(out, "Recommendation (batch size "+b+")")
	}
	for _, b := range []string{"16", "32", "64", "128", "256"} {
		out = append(out, "ResNet-18 (batch size "+b+")", "Transformer (batch size "+b+")")
	}
	for _, b := range []string{"16", "32", "64", "128"} {
		out = append(out, "ResNet-50 (batch size "+b+")")
	}
	return out
}()

func TestShippedMappingCoversGavelsJobTypes(t *testing.T) {
	s := loadSensitivity(t)
	if got := len(s.JobTypes()); got != 26 {
		t.Fatalf("%d job types mapped, want 26", got)
	}
	want := map[string]string{"A3C": FlatModel, "CycleGAN": "vae", "LM": "lstm", "Recommendation": "vae",
		"ResNet-18": "res18", "ResNet-50": "res50", "Transformer": "transformer"}
	for _, jt := range gavelJobTypes {
		prof, err := s.Profile(jt)
		if err != nil {
			t.Fatal(err)
		}
		if prof.Model != want[family(jt)] {
			t.Errorf("%s maps to %s, want %s", jt, prof.Model, want[family(jt)])
		}
	}
	flat, _ := s.Profile("A3C")
	if v, _ := flat.Factor(1, 20.83); v != 1 {
		t.Errorf("A3C (flat) at the grid's lowest point: %g, want 1", v)
	}
}

func TestUnknownJobTypeIsNamed(t *testing.T) {
	_, err := loadSensitivity(t).Profile("BERT (batch size 8)")
	if err == nil || !strings.Contains(err.Error(), `"BERT (batch size 8)"`) || !strings.Contains(err.Error(), "gavel_synergy_models.csv") {
		t.Fatalf("error %v, want one naming the job type and the mapping file", err)
	}
}

func TestMappingTablesNameTheBadLine(t *testing.T) {
	p := loadProfiles(t)
	head := "job_type,synergy_model,reason\n"
	for name, c := range map[string]struct{ body, want string }{
		"model":  {head + "A3C,flat,none close\nLM (batch size 5),lstmx,typo\n", `:3: job type "LM (batch size 5)": no Synergy profile "lstmx"`},
		"repeat": {head + "A3C,flat,none close\nA3C,vae,again\n", `:3: job_type "A3C" repeated (first on line 2)`},
		"empty":  {head + "A3C,flat,\n", ":2: empty reason"},
		"header": {"job,model,reason\nA3C,flat,x\n", ":1: header job,model,reason, want job_type,synergy_model,reason"},
		"fields": {head + "A3C,flat\n", "wrong number of fields"},
		"none":   {head, "no rows"},
	} {
		path := filepath.Join(t.TempDir(), "map.csv")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadSensitivity(path, p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming %s and %q", name, err, path, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "classes.csv")
	if err := os.WriteFile(path, []byte("model,class,reason\nT4,a100,faster\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOpenbClasses(path); err == nil || !strings.Contains(err.Error(), path+`:2: model T4: class "a100"`) {
		t.Errorf("error %v, want one naming line 2 and the class", err)
	}
}

func TestOpenbNodesMapToThroughputClasses(t *testing.T) {
	classes, err := LoadOpenbClasses(repotest.Data("fungible", "openb_gpu_classes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := sim.LoadNodes(repotest.OpenbNodes())
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenbCluster(nodes, classes)
	if err != nil {
		t.Fatal(err)
	}
	gpus := map[string]int{}
	for _, s := range c {
		gpus[s.GPUType] += s.GPUs
	}
	// 6,212 GPUs: every model has a class; P100 and T4 run as p100, the rest as v100.
	if len(c) != 1213 || gpus["v100"]+gpus["p100"] != 6212 || gpus["k80"] != 0 || gpus["p100"] != 3*1+107*2+22*2+2*2+387*2+17*4 {
		t.Fatalf("%d servers, GPUs by class %v", len(c), gpus)
	}
	if fc, fm := c.FairShare("p100"); fc != 4 || fm != 30 {
		t.Errorf("p100 fair share (%g, %g), want the smallest per-GPU share (4 CPUs, 30 GB)", fc, fm)
	}
	if fc, fm := c.FairShare("v100"); fc != 8 || fm != 32 {
		t.Errorf("v100 fair share (%g, %g), want the smallest per-GPU share (8 CPUs, 32 GB)", fc, fm)
	}
	delete(classes, "G3")
	if _, err := OpenbCluster(nodes, classes); err == nil || !strings.Contains(err.Error(), `GPU model "G3"`) || !strings.Contains(err.Error(), "node openb-node-") {
		t.Errorf("error %v, want one naming the node and its model", err)
	}
}
