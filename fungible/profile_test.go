package fungible

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadProfilesReadsSynergysTwelveModels(t *testing.T) {
	p := loadProfiles(t)
	want := "alexnet bert deepspeech gnmt lstm m5 mobilenet res18 res50 shufflenet transformer vae"
	if got := strings.Join(p.Models(), " "); got != want {
		t.Fatalf("models %q, want %q", got, want)
	}
	// Best cases: the file's cpus, its mem where given, else the least memory at which the cpus
	// row tops out (Synergy's own alexnet_1 says 62.5*2, m5_1 62.5*3).
	for model, best := range map[string][2]float64{
		"res18": {9, 62.5}, "res50": {4, 62.5}, "alexnet": {12, 125}, "m5": {6, 187.5},
		"shufflenet": {12, 125}, "mobilenet": {6, 62.5}, "lstm": {1, 20.83},
	} {
		prof, err := p.Profile(model)
		if err != nil {
			t.Fatal(err)
		}
		if prof.BestCPUs != best[0] || prof.BestMem != best[1] {
			t.Errorf("%s best case (%g, %g), want %v", model, prof.BestCPUs, prof.BestMem, best)
		}
	}
}

func TestFactorInterpolatesBilinearlyAndIsExactOnTheGrid(t *testing.T) {
	res18, _ := loadProfiles(t).Profile("res18")
	for _, c := range []struct {
		cpus, mem, want float64
	}{
		{3, 62.5, 1},                                // fair share
		{9, 62.5, 2.4},                              // best case
		{1, 20.83, 0.1},                             // grid's lowest point
		{7.5, 62.5, (1.75 + 2.4) / 2},               // halfway between rows 6 and 9
		{3, (20.83 + 62.5) / 2, 0.55},               // halfway between the first two memory columns
		{4.5, 41.665, (0.1 + 1.3 + 0.1 + 1.53) / 4}, // rows 4 and 5, first two columns
		{48, 500, 2.4},                              // above the grid: the top holds
	} {
		got, err := res18.Factor(c.cpus, c.mem)
		if err != nil {
			t.Fatal(err)
		}
		if !approx(got, c.want) {
			t.Errorf("res18 at (%g CPUs, %g GB) = %g, want %g", c.cpus, c.mem, got, c.want)
		}
	}
	for _, c := range [][2]float64{{0.5, 62.5}, {3, 10}} {
		if _, err := res18.Factor(c[0], c[1]); err == nil || !strings.Contains(err.Error(), "below Synergy's lowest measured") {
			t.Errorf("Factor(%v) = %v, want below-the-grid error", c, err)
		}
	}
}

// TestProfilesAreMonotone: more CPUs or memory never lowers a vendored profile, which bilinear
// interpolation then keeps between grid points (docs/fungible.md relies on it).
func TestProfilesAreMonotone(t *testing.T) {
	p := loadProfiles(t)
	for _, model := range p.Models() {
		prof, _ := p.Profile(model)
		for i, row := range prof.tput {
			for j, v := range row {
				if (i > 0 && v < prof.tput[i-1][j]) || (j > 0 && v < row[j-1]) {
					t.Errorf("%s: tput[%d][%d] = %g is below a neighbour with fewer resources", model, i, j, v)
				}
			}
		}
	}
}

func TestFlatProfileIsOneEverywhere(t *testing.T) {
	flat, err := loadProfiles(t).Profile(FlatModel)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]float64{{1, 20.83}, {2.5, 100}, {24, 250}} {
		if v, err := flat.Factor(c[0], c[1]); err != nil || v != 1 {
			t.Errorf("flat at %v = %v, %v", c, v, err)
		}
	}
	if flat.BestCPUs != 1 || flat.BestMem != 20.83 {
		t.Errorf("flat best case (%g, %g), want the grid's lowest point", flat.BestCPUs, flat.BestMem)
	}
}

func TestLoadProfilesNamesTheBadField(t *testing.T) {
	good := `"tput_rows_cpus_per_gpu":[1,3],"tput_cols_mem_gb_per_gpu":[20,60]`
	for name, c := range map[string]struct{ body, want string }{
		"short row": {`{` + good + `,"profiles":{"x_1":{"model":"x","gpus":1,"cpus":1,"tput":[[1,1],[1]]}}}`, "profiles.x_1.tput row 2: 1 values, want 2"},
		"rows":      {`{` + good + `,"profiles":{"x_1":{"model":"x","gpus":1,"cpus":1,"tput":[[1,1]]}}}`, "profiles.x_1.tput: 1 rows, want 2"},
		"key":       {`{` + good + `,"profiles":{"y_1":{"model":"x","gpus":1,"cpus":1,"tput":[[1,1],[1,1]]}}}`, "profiles.y_1: model \"x\" does not match its key"},
		"cpus":      {`{` + good + `,"profiles":{"x_1":{"model":"x","gpus":1,"cpus":2,"tput":[[1,1],[1,1]]}}}`, "profiles.x_1.cpus = 2 is not a grid row"},
		"zero":      {`{` + good + `,"profiles":{"x_1":{"model":"x","gpus":1,"cpus":1,"tput":[[1,0],[1,1]]}}}`, "profiles.x_1.tput[0][1] = 0, want > 0"},
		"axis":      {`{"tput_rows_cpus_per_gpu":[3,1],"tput_cols_mem_gb_per_gpu":[20,60],"profiles":{}}`, "tput_rows_cpus_per_gpu = [3 1]"},
		"empty":     {`{` + good + `,"profiles":{}}`, "no 1-GPU profiles"},
		"json":      {`{`, "unexpected end of JSON input"},
	} {
		path := filepath.Join(t.TempDir(), "profiles.json")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadProfiles(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming %s and %q", name, err, path, c.want)
		}
	}
}
