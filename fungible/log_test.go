package fungible_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/fungible/fungibletest"
)

// loggedRun runs TUNE in SRTF order on a busy generated workload (partners and resizes happen)
// and returns its decision log.
func loggedRun(t *testing.T, seed uint64) []byte { return loggedRunOf(t, "synergy-tune", seed) }

// loggedRunOf runs rule in SRTF order.
func loggedRunOf(t *testing.T, ruleName string, seed uint64) []byte {
	t.Helper()
	m := fungibletest.Model(t)
	c := fungibletest.Cluster(t, "8:8:8")
	work := fungibletest.Work(t, m, 40, 300, seed)
	rule, err := fungible.LookupRule(ruleName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fungible.RunConfig{Rule: rule, Order: fungibletest.Order(t, "srtf")}
	rec := fungible.Record(&cfg)
	res, err := fungible.Run(c, m, work, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	h := fungible.LogHeader{Cluster: "8:8:8", ServerGPUs: 8, Servers: fungible.LogServers(c), RoundS: 360, Rule: ruleName, Order: "srtf",
		Workload: "jobs=40,lam=300,multigpu", Seed: seed, Jobs: fungible.LogJobs(work)}
	if err := fungible.WriteLog(&b, h, rec.Rounds, res); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// rulePolicy runs a rule on each round's queue as a round policy.
type rulePolicy struct{ rule fungible.Rule }

func (p rulePolicy) Plan(l *fungible.Ledger, m fungible.SpeedModel, s fungible.RoundState) (fungible.Plan, error) {
	return p.rule(l, m, s.Queue)
}

// The same seed writes the same bytes; the log reads back, no server is over capacity at any
// round, and replaying its allocations through the round loop reproduces every job's JCT, for
// TUNE (which resizes) and Gandiva (which packs pairs onto the same GPUs).
func TestLogReplays(t *testing.T) {
	a, b := loggedRun(t, 7), loggedRun(t, 7)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with seed 7 wrote different logs")
	}
	if bytes.Equal(a, loggedRun(t, 8)) {
		t.Fatal("seeds 7 and 8 wrote the same log")
	}
	for _, rule := range []string{"synergy-tune", "gandiva"} {
		t.Run(rule, func(t *testing.T) { checkReplay(t, loggedRunOf(t, rule, 7), rule == "gandiva") })
	}
}

func checkReplay(t *testing.T, a []byte, pairs bool) {
	lg, err := fungible.ReadLog(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.Check(); err != nil {
		t.Fatal(err)
	}
	partners := 0
	for _, rd := range lg.Rounds {
		for _, al := range rd.Allocs {
			if al.Partner >= 0 {
				partners++
			}
		}
	}
	if len(lg.Rounds) < 10 || lg.End.Rounds != len(lg.Rounds) {
		t.Fatalf("%d rounds, end %+v", len(lg.Rounds), lg.End)
	}
	if pairs != (partners > 0) {
		t.Fatalf("%d allocations with a partner", partners)
	}
	res, err := fungible.Run(lg.Cluster(), fungibletest.Model(t), lg.Work(), fungible.RunConfig{Policy: rulePolicy{lg.ReplayRule()}, Order: fungibletest.Order(t, "srtf")})
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.Replayed(res); err != nil {
		t.Fatal(err)
	}
	// Another order hands the replay other queues: refused, naming the line.
	if _, err := fungible.Run(lg.Cluster(), fungibletest.Model(t), lg.Work(), fungible.RunConfig{Policy: rulePolicy{lg.ReplayRule()}, Order: fungibletest.Order(t, "fifo")}); err == nil || !strings.Contains(err.Error(), "is not the logged") {
		t.Fatalf("replay in another order: %v", err)
	}
}

// Bad input is refused naming the line and the field; an allocation over a server's capacity is
// refused by Check naming the line, the job, the server and the resource.
func TestLogBadInput(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(string(loggedRun(t, 7)), "\n"), "\n")
	busy := -1 // the first round line holding an allocation
	for i := 1; i < len(lines) && busy < 0; i++ {
		if strings.Contains(lines[i], `"cpus_per_gpu"`) {
			busy = i
		}
	}
	// edit rewrites line i's JSON object with change applied to it.
	edit := func(i int, change func(map[string]any)) string {
		var obj map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &obj); err != nil {
			t.Fatal(err)
		}
		change(obj)
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out := append([]string{}, lines...)
		out[i] = string(data)
		return strings.Join(out, "\n") + "\n"
	}
	firstAlloc := func(o map[string]any) map[string]any { return o["allocations"].([]any)[0].(map[string]any) }
	at := fmt.Sprintf("line %d: ", busy+1)
	for _, tc := range []struct {
		name, log, want string
	}{
		{"empty", "", "line 1: empty log"},
		{"schema", edit(0, func(o map[string]any) { o["schema"] = "other" }), "line 1: schema \"other\""},
		{"unknown field", edit(busy, func(o map[string]any) { o["note"] = 1 }), at + `json: unknown field "note"`},
		{"unknown job", edit(busy, func(o map[string]any) { firstAlloc(o)["job"] = 9999 }), at + "round " + fmt.Sprint(busy-1)},
		{"rounds out of order", edit(busy, func(o map[string]any) { o["round"] = 5000 }), at + "round 5000"},
		{"server out of range", edit(busy, func(o map[string]any) {
			firstAlloc(o)["parts"].([]any)[0].(map[string]any)["server"] = 99
		}), "server 99, the header has 3"},
		{"no end", strings.Join(lines[:len(lines)-1], "\n") + "\n", "without its end record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fungible.ReadLog(strings.NewReader(tc.log))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	lg, err := fungible.ReadLog(strings.NewReader(edit(busy, func(o map[string]any) { firstAlloc(o)["cpus_per_gpu"] = 100 })))
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.Check(); err == nil || !strings.Contains(err.Error(), at) || !strings.Contains(err.Error(), ": cpu: ") {
		t.Fatalf("over capacity: %v", err)
	}
}
