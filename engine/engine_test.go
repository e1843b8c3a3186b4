package engine

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/sim"
)

// trace runs e to the end and lists the handled events as "time kind subject".
func trace(t *testing.T, e *Engine, h Handler) []string {
	t.Helper()
	var out []string
	err := e.Run(math.Inf(1), func(e *Engine, ev Event) error {
		out = append(out, ev.Kind.String()+" "+string(rune('a'+ev.Subject)))
		if h != nil {
			return h(e, ev)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustAt(t *testing.T, e *Engine, at float64, k Kind, subject int) ID {
	t.Helper()
	id, err := e.At(at, k, subject)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestOrderTimeKindInsertion(t *testing.T) {
	e := New(nil)
	mustAt(t, e, 5, Arrival, 0)
	mustAt(t, e, 1, Arrival, 1)
	mustAt(t, e, 5, Complete, 2)
	mustAt(t, e, 5, Arrival, 3)
	mustAt(t, e, 5, RoundBoundary, 4)
	mustAt(t, e, 5, Preempt, 5)
	got := strings.Join(trace(t, e, nil), ", ")
	want := "arrival b, complete c, preempt f, round e, arrival a, arrival d"
	if got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
	if e.Now() != 5 || e.Handled() != 6 || e.Pending() != 0 {
		t.Fatalf("now %v, handled %d, pending %d", e.Now(), e.Handled(), e.Pending())
	}
}

func TestTriggerRunsOnceAfterTheInstant(t *testing.T) {
	e := New(nil)
	mustAt(t, e, 2, Arrival, 0)
	mustAt(t, e, 2, Arrival, 1)
	mustAt(t, e, 3, Arrival, 2)
	got := strings.Join(trace(t, e, func(e *Engine, ev Event) error {
		if ev.Kind == Arrival {
			e.Trigger()
			e.Trigger()
			if ev.Subject == 0 {
				_, err := e.At(2, Complete, 3) // same instant, still before the trigger
				return err
			}
		}
		return nil
	}), ", ")
	// Subject -1 of a trigger prints as 'a'-1.
	want := "arrival a, complete d, arrival b, trigger `, arrival c, trigger `"
	if got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
}

func TestCancelAndUntil(t *testing.T) {
	e := New(nil)
	mustAt(t, e, 1, Arrival, 0)
	done := mustAt(t, e, 4, Complete, 0)
	mustAt(t, e, 9, Arrival, 1)
	e.Cancel(done)
	e.Cancel(done)
	if e.Pending() != 2 {
		t.Fatalf("pending %d after cancelling one of three", e.Pending())
	}
	var seen []float64
	if err := e.Run(8, func(e *Engine, ev Event) error { seen = append(seen, ev.Time); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != 1 || e.Now() != 1 || e.Pending() != 1 {
		t.Fatalf("handled %v, now %v, pending %d", seen, e.Now(), e.Pending())
	}
	first := ID(1) // popped already: cancelling it changes nothing
	e.Cancel(first)
	if e.Pending() != 1 {
		t.Fatalf("pending %d after cancelling a handled event", e.Pending())
	}
}

func TestSchedulingErrors(t *testing.T) {
	e := New(nil)
	mustAt(t, e, 10, Arrival, 0)
	if err := e.Run(math.Inf(1), func(*Engine, Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"past":     func() error { _, err := e.At(9, Arrival, 1); return err },
		"nan":      func() error { _, err := e.At(math.NaN(), Arrival, 1); return err },
		"inf":      func() error { _, err := e.After(math.Inf(1), Complete, 1); return err },
		"kind":     func() error { _, err := e.At(11, numKinds, 1); return err },
		"downtime": func() error { _, _, err := e.Migration(1, -1); return err },
	} {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
	mustAt(t, e, 12, Arrival, 7)
	err := e.Run(math.Inf(1), func(*Engine, Event) error { return errTest })
	if err == nil || !strings.Contains(err.Error(), "t=12 arrival of 7: test") {
		t.Fatalf("handler error %v", err)
	}
}

var errTest = errors.New("test")

func TestMigrationAndLogClock(t *testing.T) {
	c, err := sim.NewCluster([]sim.Node{{Name: "n0", CPU: 1000, Mem: 1000}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := sim.NewLogHeader(c, nil)
	h.Version = sim.LogVersionTimed
	var buf bytes.Buffer
	lw, err := sim.NewLogWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	e := New(lw)
	mustAt(t, e, 3, Arrival, 0)
	got := strings.Join(trace(t, e, func(e *Engine, ev Event) error {
		switch ev.Kind {
		case Arrival:
			_, _, err := e.Migration(0, 30)
			return err
		case MigrationStart:
			return lw.Preempt("a", "migration")
		case MigrationEnd:
			return lw.Complete("a")
		}
		return nil
	}), ", ")
	if got != "arrival a, migration-start a, migration-end a" || e.Now() != 33 {
		t.Fatalf("order %s, now %v", got, e.Now())
	}
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"type":"preempt","time":3,`) || !strings.Contains(buf.String(), `"type":"complete","time":33,`) {
		t.Fatalf("log times:\n%s", buf.String())
	}
}

// BenchmarkEngine schedules and handles 100,000 events, each handler scheduling the next of
// its chain, as a timed world's arrivals and completions do.
func BenchmarkEngine(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		e := New(nil)
		for i := range 1000 {
			if _, err := e.At(float64(i%97), Arrival, i); err != nil {
				b.Fatal(err)
			}
		}
		left := 100000 - 1000
		err := e.Run(math.Inf(1), func(e *Engine, ev Event) error {
			if left == 0 {
				return nil
			}
			left--
			_, err := e.After(float64(ev.Subject%13)+0.5, Complete, ev.Subject)
			return err
		})
		if err != nil || e.Handled() != 100000 {
			b.Fatalf("%v, %d handled", err, e.Handled())
		}
	}
}
