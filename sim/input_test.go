package sim_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/sim"
)

// Issue 26 case 8: a binary file given as a CSV is refused in one line naming the file.
func TestBinaryFileAsCSV(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "nodes.csv")
	data := make([]byte, 4096)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(bin, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := sim.LoadNodes(bin)
	if err == nil || !strings.HasPrefix(err.Error(), bin+": not a text file") || len(err.Error()) > 200 {
		t.Fatalf("got %v", err)
	}
}

// Issue 26 case 9: a node list without GPUs is blamed, not the pod list.
func TestCPUOnlyNodeListNamesTheNodeFile(t *testing.T) {
	nodes := filepath.Join(t.TempDir(), "cpu_nodes.csv")
	if err := os.WriteFile(nodes, []byte("sn,cpu_milli,memory_mib,gpu,model\nn1,96000,786432,0,\nn2,96000,786432,0,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := sim.Prepare(sim.Experiment{NodesPath: nodes, PodsPath: repotest.OpenbPods("default"), Tune: 1.3, Seed: 42, Coverage: 0.95})
	if err == nil || !strings.HasPrefix(err.Error(), nodes+": no node has a GPU") {
		t.Fatalf("got %v", err)
	}
}
