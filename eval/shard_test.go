package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withoutTimings is metrics.json less what two runs of one config differ in: the wall clock
// and the decision latencies, which measure the machine.
func withoutTimings(t *testing.T, path string) []byte {
	t.Helper()
	m, err := ReadMetrics(path)
	if err != nil {
		t.Fatal(err)
	}
	m.WallSeconds = 0
	for i := range m.Results {
		r := &m.Results[i]
		r.LatencyP50Us, r.LatencyP99Us = Summary{}, Summary{}
		for s := range r.PerSeed {
			r.PerSeed[s].WallSeconds, r.PerSeed[s].LatencyP50Us, r.PerSeed[s].LatencyP99Us = 0, 0, 0
		}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Shards run apart and merged give the local run's report: metrics.json (less timings) and
// curves.csv byte for byte.
func TestShardsMergeIntoTheLocalReport(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Seeds = "1-4"
	local := cfg
	if _, err := Run(context.Background(), local, Options{Log: quiet}); err != nil {
		t.Fatal(err)
	}
	sharded := cfg
	sharded.Out = filepath.Join(t.TempDir(), "sharded")
	remote := func(ctx context.Context, n int, _ func(context.Context, int) ([]byte, error)) ([][]byte, error) {
		parts := make([][]byte, n)
		for i := range n {
			// Parts come back from another process: nothing but their bytes is shared.
			var err error
			if parts[i], err = RunShard(ctx, cfg, Options{Log: quiet}, Shard{i, n}); err != nil {
				return nil, err
			}
		}
		return parts, nil
	}
	if _, err := Run(context.Background(), sharded, Options{Log: quiet, Remote: remote, Shards: 5}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(withoutTimings(t, filepath.Join(local.Out, "metrics.json")), withoutTimings(t, filepath.Join(sharded.Out, "metrics.json"))) {
		t.Error("metrics.json of the merged shards differs from the local run's")
	}
	// Shards run in this process on the prepared evaluation (an in-process executor) too.
	inProcess := cfg
	inProcess.Out = filepath.Join(t.TempDir(), "in-process")
	here := func(ctx context.Context, n int, local func(context.Context, int) ([]byte, error)) ([][]byte, error) {
		parts := make([][]byte, n)
		for i := range n {
			var err error
			if parts[i], err = local(ctx, i); err != nil {
				return nil, err
			}
		}
		return parts, nil
	}
	if _, err := Run(context.Background(), inProcess, Options{Log: quiet, Remote: here, Shards: 3}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(withoutTimings(t, filepath.Join(local.Out, "metrics.json")), withoutTimings(t, filepath.Join(inProcess.Out, "metrics.json"))) {
		t.Error("metrics.json of in-process shards differs from the local run's")
	}
	for _, f := range []string{"curves.csv", "report.md"} {
		a, _ := os.ReadFile(filepath.Join(local.Out, f))
		b, _ := os.ReadFile(filepath.Join(sharded.Out, f))
		if f == "curves.csv" && !bytes.Equal(a, b) || len(b) == 0 {
			t.Errorf("%s of the merged shards differs from the local run's", f)
		}
	}
}

// A part from another config, a missing cell or a foreign schema is refused by name, and no
// report is written.
func TestMergeRefusesForeignParts(t *testing.T) {
	cfg := smallConfig(t)
	other := cfg
	other.Seeds = "2-4"
	good, err := RunShard(context.Background(), cfg, Options{Log: quiet}, Shard{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := RunShard(context.Background(), other, Options{Log: quiet}, Shard{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		parts [][]byte
		want  string
	}{
		"other seeds": {[][]byte{foreign}, "seed 2, want"},
		"schema":      {[][]byte{bytes.Replace(good, []byte(PartSchema), []byte("x/v9"), 1)}, `schema "x/v9"`},
		"not json":    {[][]byte{[]byte("{")}, "part of shard 0/1"},
		"short":       {[][]byte{[]byte(`{"schema":"` + PartSchema + `","shard":0,"shards":1,"cells":9,"tune":1.3,"runs":[]}`)}, "cell 0 (shard 0/1) is missing"},
	} {
		cfg.Out = filepath.Join(t.TempDir(), "report")
		remote := func(context.Context, int, func(context.Context, int) ([]byte, error)) ([][]byte, error) {
			return c.parts, nil
		}
		_, err := Run(context.Background(), cfg, Options{Log: quiet, Remote: remote, Shards: 1})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want it to say %q", name, err, c.want)
		}
		if _, serr := os.Stat(cfg.Out); serr == nil {
			t.Errorf("%s: a report was written", name)
		}
	}
	if _, err := ParseShard("3/3"); err == nil {
		t.Error("shard 3/3 accepted")
	}
}

// Timed worlds shard the same way: the merged report's metrics.json (less wall clock),
// jct.csv and series.csv are the local run's, byte for byte.
func TestTimedShardsMergeIntoTheLocalReport(t *testing.T) {
	cfg := timedConfig(t, "jobs")
	cfg.Policies = []string{"fifo", "srtf"}
	if _, err := RunTimed(context.Background(), cfg, Options{Log: quiet}); err != nil {
		t.Fatal(err)
	}
	sharded := cfg
	sharded.Out = filepath.Join(t.TempDir(), "sharded")
	remote := func(ctx context.Context, n int, _ func(context.Context, int) ([]byte, error)) ([][]byte, error) {
		parts := make([][]byte, n)
		for i := range n {
			var err error
			if parts[i], err = RunShard(ctx, cfg, Options{Log: quiet}, Shard{i, n}); err != nil {
				return nil, err
			}
		}
		return parts, nil
	}
	if _, err := RunTimed(context.Background(), sharded, Options{Log: quiet, Remote: remote, Shards: 3}); err != nil {
		t.Fatal(err)
	}
	read := func(dir string) []byte {
		m, err := ReadTimedMetrics(filepath.Join(dir, "metrics.json"))
		if err != nil {
			t.Fatal(err)
		}
		m.WallSeconds = 0
		for r := range m.Results {
			for s := range m.Results[r].PerSeed {
				m.Results[r].PerSeed[s].WallSeconds = 0
			}
		}
		data, _ := json.Marshal(m)
		return data
	}
	if !bytes.Equal(read(cfg.Out), read(sharded.Out)) {
		t.Error("timed metrics.json of the merged shards differs from the local run's")
	}
	for _, f := range []string{timedJCTFile, timedSeriesCSV} {
		a, _ := os.ReadFile(filepath.Join(cfg.Out, f))
		b, _ := os.ReadFile(filepath.Join(sharded.Out, f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s of the merged shards differs from the local run's", f)
		}
	}
	static, err := RunShard(context.Background(), smallConfig(t), Options{Log: quiet}, Shard{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	sharded.Out = filepath.Join(t.TempDir(), "foreign")
	foreign := func(context.Context, int, func(context.Context, int) ([]byte, error)) ([][]byte, error) {
		return [][]byte{static}, nil
	}
	if _, err := RunTimed(context.Background(), sharded, Options{Log: quiet, Remote: foreign, Shards: 1}); err == nil || !strings.Contains(err.Error(), TimedPartSchema) {
		t.Errorf("a static part merged into a timed report: %v", err)
	}
}
