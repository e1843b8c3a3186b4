package jobs

import (
	"math"
	"strings"
	"testing"
)

// Times, steps, weights and round lengths at the edges of float64 are refused with the field
// named before a run starts, never run for ever nor turned into a JCT of 0 (issue 34, classes
// 1 and 2).
func TestEdgeValuesRefusedBeforeTheRun(t *testing.T) {
	table := loadTable(t)
	// fields: total steps, scale factor, priority weight, arrival
	line := func(steps, weight, arrival string) string {
		return "ResNet-18 (batch size 64)\tpython3 main.py\timage_classification/cifar10\t--num_steps\t1\t" + steps + "\t1\t" + weight + "\t-1.000000\t" + arrival + "\n"
	}
	good := line("1000", "1", "0")
	read := []struct{ name, text, want string }{
		{"arrival 1e300", good + line("1000", "1", "1e300"), "bad.trace:2: arrival time 1e+300 s is beyond the limit"},
		{"arrival +Inf", good + line("1000", "1", "+Inf"), "bad.trace:2: arrival time \"+Inf\" is not a number"},
		{"arrival NaN", good + line("1000", "1", "NaN"), "bad.trace:2: arrival time \"NaN\" is not a number"},
		{"weight +Inf", line("1000", "+Inf", "0"), "bad.trace:1: priority weight \"+Inf\", want a finite number > 0"},
		{"weight NaN", line("1000", "NaN", "0"), "bad.trace:1: priority weight \"NaN\""},
	}
	for _, c := range read {
		if _, err := ReadTrace(writeFile(t, "bad.trace", c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
	run := []struct {
		name, text string
		round      float64
		want       string
	}{
		{"steps near int64's limit", good + line("9223372036854775807", "1", "5"), 360, "job 1 runs"},
		{"round that does not move the clock", good, 1e-300, "round 1e-300 s: the 1 jobs could need"},
		{"round below a millisecond on a long trace", good + line("10000000", "1", "5"), 1e-3, "use a longer round"},
		{"round +Inf", good, math.Inf(1), "round +Inf s, want > 0"},
	}
	for _, c := range run {
		tr, err := ReadTrace(writeFile(t, "edge.trace", c.text))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, compat := range []string{CompatNone, CompatGavel} {
			_, err := Run(tr, table, Config{Cluster: cluster(t, "1:1:1"), Policy: "fifo", Round: c.round, Compat: compat})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s (compat %q): error %v, want it to contain %q", c.name, compat, err, c.want)
			}
		}
	}
}
