package datasets

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/fungible/fungibletest"
	"github.com/schedrl/schedrl/internal/repotest"
)

// maifsTables are the vendored tables the logs below name.
var maifsTables = map[string]string{
	"throughputs": repotest.Data("gavel", "simulation_throughputs.json"),
	"profiles":    repotest.Data("synergy", "profiles.json"),
	"mapping":     repotest.Data("fungible", "gavel_synergy_models.csv"),
}

// writeTuneLog runs TUNE in SRTF order on a busy 8:8:8 cluster with seed and writes its decision
// log into dir, as `schedrl jobs --servers-gpus 8 --log` does.
func writeTuneLog(t *testing.T, dir string, seed uint64) string {
	t.Helper()
	m := fungibletest.Model(t)
	c := fungibletest.Cluster(t, "8:8:8")
	work := fungibletest.Work(t, m, 50, 400, seed)
	cfg := fungible.RunConfig{Rule: fungible.Tune, Order: fungibletest.Order(t, "srtf")}
	rec := fungible.Record(&cfg)
	res, err := fungible.Run(c, m, work, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := fungible.LogHeader{Cluster: "8:8:8", ServerGPUs: 8, Servers: fungible.LogServers(c), RoundS: 360, Rule: "synergy-tune", Order: "srtf",
		Workload: "jobs=50,lam=400,multigpu", Seed: seed, Jobs: fungible.LogJobs(work)}
	path := filepath.Join(dir, "tune-seed"+itoa(int(seed))+".jsonl")
	if err := fungible.WriteLogFile(path, h, maifsTables, rec.Rounds, res); err != nil {
		t.Fatal(err)
	}
	return path
}

func maifsBuildOptions(logs, out string) MAIFSBuildOptions {
	return MAIFSBuildOptions{Logs: logs, Out: out, Throughputs: maifsTables["throughputs"], Profiles: maifsTables["profiles"],
		Mapping: maifsTables["mapping"], ValSeeds: []uint64{5}, Every: 3}
}

// The dataset built from the decision logs is the one the in-process recorder gives: the same
// decision points, labels and turn masks, byte for byte the same shards; pyarrow reads it.
func TestBuildMAIFSFromLogsEqualsInProcess(t *testing.T) {
	logs := t.TempDir()
	writeTuneLog(t, logs, 4)
	writeTuneLog(t, logs, 5)
	built := filepath.Join(t.TempDir(), "built")
	bm, stats, err := BuildMAIFS(maifsBuildOptions(filepath.Join(logs, "*.jsonl"), built))
	if err != nil {
		t.Fatal(err)
	}
	m := fungibletest.Model(t)
	c := fungibletest.Cluster(t, "8:8:8")
	e, err := env.NewMAIFS(c, m, env.MAIFSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inProcess := map[string][]env.MAIFSSample{}
	for seed, split := range map[uint64]string{4: SplitTrain, 5: SplitVal} {
		rec := &env.MAIFSRecorder{Env: e, Rule: fungible.Tune, Every: 3}
		if _, err := fungible.Run(c, m, fungibletest.Work(t, m, 50, 400, seed), fungible.RunConfig{Policy: rec, Order: fungibletest.Order(t, "srtf")}); err != nil {
			t.Fatal(err)
		}
		inProcess[split] = rec.Samples
	}
	direct := filepath.Join(t.TempDir(), "direct")
	if err := WriteMAIFS(direct, MAIFSManifest{Cluster: "8:8:8", ServerGPUs: 8, Options: e.Options()}, inProcess, false); err != nil {
		t.Fatal(err)
	}
	dm, err := ReadMAIFSManifest(direct)
	if err != nil {
		t.Fatal(err)
	}
	for _, split := range []string{SplitTrain, SplitVal} {
		if bm.Splits[split].Points != len(inProcess[split]) || !slices.Equal(bm.Splits[split].Shards, dm.Splits[split].Shards) {
			t.Fatalf("%s: built %+v, in process %+v", split, bm.Splits[split], dm.Splits[split])
		}
		got, err := ReadMAIFS(built, split, e)
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range inProcess[split] {
			if !slices.Equal(got[p].Actions, want.Actions) || !slices.Equal(got[p].Rank, want.Rank) || len(got[p].Turn) != len(want.Turn) {
				t.Fatalf("%s decision point %d differs", split, p)
			}
		}
	}
	if stats.Logs != 2 || stats.Points != len(inProcess[SplitTrain])+len(inProcess[SplitVal]) || stats.Points < 10 {
		t.Fatalf("stats %+v", stats)
	}
	py := pyarrowPython(t)
	out, err := exec.Command(py, "-c", "import sys, pyarrow.parquet as pq; print(pq.read_table(sys.argv[1]).num_rows)",
		filepath.Join(built, bm.Splits[SplitTrain].Shards[0].Path)).Output()
	if err != nil || strings.TrimSpace(string(out)) != itoa(int(bm.Splits[SplitTrain].Shards[0].Rows)) {
		t.Fatalf("pyarrow: %q (%v), the manifest says %d rows", out, err, bm.Splits[SplitTrain].Shards[0].Rows)
	}
}

// A log the build cannot reproduce is refused naming the file (and the line where it can), and
// nothing is written.
func TestBuildMAIFSRefusesBadLogs(t *testing.T) {
	logs := t.TempDir()
	good := writeTuneLog(t, logs, 4)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	rewrite := func(name string, i int, change func(map[string]any)) string {
		var obj map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &obj); err != nil {
			t.Fatal(err)
		}
		change(obj)
		b, _ := json.Marshal(obj)
		out := append([]string{}, lines...)
		out[i] = string(b)
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, name), []byte(strings.Join(out, "\n")+"\n"))
		return filepath.Join(dir, name)
	}
	busy := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"cpus_per_gpu"`) })
	for _, tc := range []struct {
		name, logs, want string
	}{
		{"other tables", rewrite("a.jsonl", 0, func(o map[string]any) { o["files"].([]any)[0].(map[string]any)["sha256"] = "00" }), "a.jsonl: its mapping"},
		{"over capacity", rewrite("b.jsonl", busy, func(o map[string]any) {
			o["allocations"].([]any)[0].(map[string]any)["cpus_per_gpu"] = 100
		}), "b.jsonl: line " + itoa(busy+1)},
		{"an allocation no candidate says", rewrite("c.jsonl", busy, func(o map[string]any) {
			o["allocations"].([]any)[0].(map[string]any)["mem_gb_per_gpu"] = 20.83
		}), "c.jsonl: round at"},
		{"another outcome", rewrite("d.jsonl", len(lines)-1, func(o map[string]any) { o["jct_s"].([]any)[0] = 1.0 }), "d.jsonl: replay: "},
		{"only validation", good, "no decision point for training"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := maifsBuildOptions(tc.logs, filepath.Join(t.TempDir(), "ds"))
			if tc.name == "only validation" {
				o.ValSeeds = []uint64{4}
			}
			if _, _, err := BuildMAIFS(o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(o.Out); !os.IsNotExist(err) {
				t.Fatalf("%s was written", o.Out)
			}
		})
	}
}
