package eval

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
)

func TestLoadPaperPublishedMeans(t *testing.T) {
	p, err := LoadPaper(repotest.PaperTable())
	if err != nil {
		t.Fatal(err)
	}
	// The means the paper reports (data/fgd-paper/README.md), seeds 42..51, GPU allocated at 130%.
	for _, tc := range []struct {
		trace, policy string
		want          float64
	}{
		{"default", "fgd", 95.39}, {"default", "bestfit", 93.08}, {"default", "random", 87.47},
		{"gpushare100", "fgd", 86.90}, {"multigpu50", "packing", 96.18},
	} {
		c, ok := p.Lookup(PolicyRef{Kind: Heuristic, Name: tc.policy}, tc.trace, 1.3)
		if !ok {
			t.Fatalf("no paper curve for %s on %s", tc.policy, tc.trace)
		}
		if got := c.Point().AllocGPUPct130; c.Seeds != 10 || math.Abs(got-tc.want) > 0.006 {
			t.Errorf("%s on %s: %.3f over %d seeds, want %.2f over 10", tc.policy, tc.trace, got, c.Seeds, tc.want)
		}
	}
	if _, ok := p.Lookup(PolicyRef{Kind: Heuristic, Name: "fgd"}, "default", 1.0); ok {
		t.Error("the paper ran tune 1.3 only; a tune-1.0 lookup must find nothing")
	}
	if _, ok := p.Lookup(PolicyRef{Kind: Checkpoint, Dir: "x"}, "default", 1.3); ok {
		t.Error("checkpoints have no paper curve")
	}
}

func TestLoadPaperBadInput(t *testing.T) {
	dir := t.TempDir()
	cols, pcts := make([]string, 131), make([]string, 131)
	for i := range cols {
		cols[i], pcts[i] = "1", strconv.Itoa(i)
	}
	header := "workload,sc_policy,tune,seed,total_gpus," + strings.Join(pcts, ",")
	good := "openb_pod_list_default,06-FGD,1.3,42,6212," + strings.Join(cols, ",")
	bad := strings.Replace(good, ",1,1,1", ",1,x,1", 1)
	for _, tc := range []struct{ name, body, wantErr string }{
		{"missing column", "workload,sc_policy\n", `lacks column "tune"`},
		{"not a number", header + "\n" + bad + "\n", ":2: column"},
	} {
		path := filepath.Join(dir, tc.name+".csv")
		if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadPaper(path); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error = %v, want it to mention %q", tc.name, err, tc.wantErr)
		}
	}
}
