package online

import (
	"path/filepath"
	"testing"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
)

// make-room's invocations on a timeline become migration logs that the datasets stage turns
// into defrag transitions: every logged plan is a valid demonstration of the defrag
// environment, STOP-only ones included.
func TestDemosBuildADefragDataset(t *testing.T) {
	tl, cfg := smallTimeline(t)
	dir := t.TempDir()
	logs, err := Demos(tl, cfg, "make-room", env.DefragOptions{RewardPending: 1}, filepath.Join(dir, "logs"), "s5")
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) < 5 {
		t.Fatalf("%d invocations logged", len(logs))
	}
	m, stats, err := datasets.Build(datasets.BuildOptions{Logs: filepath.Join(dir, "logs", "*.jsonl"), Env: env.DefragName,
		Out: filepath.Join(dir, "ds"), ValFraction: 0.2, ShardRows: 4096, RowGroupRows: 1024, Gamma: 0.99, Workers: 1,
		Defrag: env.DefragOptions{RewardPending: 1}})
	if err != nil {
		t.Fatal(err)
	}
	// One STOP per invocation that stopped early, two rows per migration.
	if stats.Episodes != int64(len(logs)) || stats.Rows < int64(len(logs)) || m == nil {
		t.Errorf("%d logs -> %d episodes, %d rows", len(logs), stats.Episodes, stats.Rows)
	}
	if _, err := Demos(tl, cfg, "nonsense", env.DefragOptions{}, dir, "x"); err == nil {
		t.Error("unknown method accepted")
	}
}
