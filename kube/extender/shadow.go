package extender

import (
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedrl/schedrl/kube/shadowlog"
	"github.com/schedrl/schedrl/sim"
)

// ShadowOptions configure a shadow placer: a candidate asked every question the serving
// placer answered, on a copy of the cluster as the serving placer saw it, by a worker of its
// own, so it never delays an answer to the scheduler.
type ShadowOptions struct {
	Placer sim.Placer
	// Model names the candidate in the records ("placement@candidate" resolved to a version).
	Model string
	// Queue bounds the questions waiting for the worker (default 256); a full queue drops the
	// question and counts it.
	Queue int
	// Seed seeds the candidate's random draws (a stream of its own).
	Seed uint64
	// Log receives the records (nil: metrics only); the shadow closes it.
	Log *shadowlog.Writer
	// Logger reports write errors.
	Logger *slog.Logger
}

// shadowStream is the candidate's random stream: apart from the serving placer's.
const shadowStream = sim.StreamPolicy + 100

// shadow is the running candidate.
type shadow struct {
	opts    ShadowOptions
	rng     *rand.Rand // the worker's alone
	jobs    chan shadowJob
	done    chan struct{}
	closeMu sync.Once

	decisions *prometheus.CounterVec
	agreement prometheus.Gauge
	fragDiff  prometheus.Gauge
	fragMean  prometheus.Gauge
	latency   *prometheus.SummaryVec

	// Worker-only: the candidate's own cluster, kept in step with the mirror's so a placer
	// that carries state across decisions on one cluster (the network's arrival count) sees
	// one cluster as the serving placer does; src is the mirror cluster it follows.
	own *sim.Cluster
	src uint64
	// Worker-only running totals behind the gauges.
	agree, compared, both int
	diffSum               float64
}

// shadowJob is one question: the pod's task on a copy of the cluster before the serving
// placer's choice was applied, and that choice.
type shadowJob struct {
	at      time.Time
	pod     string
	task    sim.Task
	c       *sim.Cluster
	src     uint64 // the mirror cluster c copies
	serving sim.Choice
	model   string
	latency time.Duration
}

// ShadowMetric names the shadow metrics (prefix).
const ShadowMetric = "schedrl_shadow_"

func newShadow(o ShadowOptions, reg *prometheus.Registry) *shadow {
	if o.Queue <= 0 {
		o.Queue = 256
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &shadow{opts: o, rng: sim.RNG(o.Seed, shadowStream), jobs: make(chan shadowJob, o.Queue), done: make(chan struct{})}
	s.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: ShadowMetric + "decisions_total",
		Help: "Shadowed questions by result: agree, disagree, unplaced (the shadow found no place), dropped (queue full)."}, []string{"result"})
	s.agreement = prometheus.NewGauge(prometheus.GaugeOpts{Name: ShadowMetric + "agreement",
		Help: "Share of shadowed pods the shadow placed on the same node and GPUs as the serving model."})
	s.fragDiff = prometheus.NewGauge(prometheus.GaugeOpts{Name: ShadowMetric + "frag_difference_sum",
		Help: "Sum over shadowed pods of the shadow's minus the serving model's fragment change, milli-GPU (negative: the shadow fragments less)."})
	s.fragMean = prometheus.NewGauge(prometheus.GaugeOpts{Name: ShadowMetric + "frag_difference_mean",
		Help: "Mean per pod of the shadow's minus the serving model's fragment change, milli-GPU, over pods both placed."})
	s.latency = prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: ShadowMetric + "place_latency_seconds",
		Help:       "Time of one placer decision, by role (serving, shadow).",
		Objectives: map[float64]float64{0.5: 0.01, 0.99: 0.001}, MaxAge: time.Hour}, []string{"role"})
	reg.MustRegister(s.decisions, s.agreement, s.fragDiff, s.fragMean, s.latency)
	go s.work()
	return s
}

// copyOf is a copy of the cluster for the question about to be offered, or nil when there is
// no shadow or its queue is full (counted as a drop). It runs under the mirror's lock: the copy
// is the only cost a shadow adds to a request, and only when the question will be queued.
func (s *shadow) copyOf(c *sim.Cluster, took time.Duration) *sim.Cluster {
	if s == nil {
		return nil
	}
	s.latency.WithLabelValues("serving").Observe(took.Seconds())
	if len(s.jobs) == cap(s.jobs) {
		s.decisions.WithLabelValues("dropped").Inc()
		return nil
	}
	return c.Clone()
}

// offer queues the question asked on c (from copyOf) without waiting. Only the request path
// sends (under the mirror's lock), so the room copyOf saw is still there.
func (s *shadow) offer(c *sim.Cluster, src uint64, t sim.Task, ch sim.Choice, model string, took time.Duration) {
	if s == nil || c == nil {
		return
	}
	select {
	case s.jobs <- shadowJob{at: time.Now(), pod: t.Name, task: t, c: c, src: src, serving: ch, model: model, latency: took}:
	default:
		s.decisions.WithLabelValues("dropped").Inc()
	}
}

func (s *shadow) work() {
	defer close(s.done)
	for j := range s.jobs {
		s.answer(j)
	}
	if s.opts.Log != nil {
		if err := s.opts.Log.Close(); err != nil {
			s.opts.Logger.Warn("extender: close shadow log", "err", err)
		}
	}
}

// follow brings the candidate's cluster to the question's state: the copy itself when the
// mirror rebuilt its cluster (as the serving placer then starts afresh), else the differences.
func (s *shadow) follow(j shadowJob) *sim.Cluster {
	if s.own == nil || s.src != j.src {
		s.own, s.src = j.c, j.src
		return s.own
	}
	for _, p := range s.own.Placements() {
		if q, ok := j.c.Placement(p.Task.Name); !ok || q.Choice != p.Choice {
			s.own.Remove(p.Task.Name)
		}
	}
	for _, p := range j.c.Placements() {
		if _, ok := s.own.Placement(p.Task.Name); !ok {
			if err := s.own.Place(p.Task, p.Choice); err != nil {
				// Cannot happen when both hold the same tasks; start afresh rather than drift.
				s.own = j.c
				return s.own
			}
		}
	}
	return s.own
}

// answer asks the candidate, compares, records.
func (s *shadow) answer(j shadowJob) {
	c := s.follow(j)
	start := time.Now()
	ch, ok := s.opts.Placer.Place(c, j.task, s.rng)
	took := time.Since(start)
	s.latency.WithLabelValues("shadow").Observe(took.Seconds())
	rec := shadowlog.Record{Time: j.at, Pod: j.pod,
		Serving: s.choice(j.c, j.task, j.serving, true, j.model, j.latency),
		Shadow:  s.choice(j.c, j.task, ch, ok, s.opts.Model, took)}
	rec.Agree = shadowlog.Same(rec.Serving, rec.Shadow)
	s.compared++
	switch {
	case rec.Agree:
		s.agree++
		s.decisions.WithLabelValues("agree").Inc()
	case !ok:
		s.decisions.WithLabelValues("unplaced").Inc()
	default:
		s.decisions.WithLabelValues("disagree").Inc()
	}
	if ok {
		d := rec.Shadow.FragDelta - rec.Serving.FragDelta
		s.both++
		s.diffSum += d
		s.fragDiff.Set(s.diffSum)
		s.fragMean.Set(s.diffSum / float64(s.both))
	}
	s.agreement.Set(float64(s.agree) / float64(s.compared))
	if s.opts.Log != nil {
		if err := s.opts.Log.Write(rec); err != nil {
			s.opts.Logger.Warn("extender: shadow log", "pod", j.pod, "err", err)
		}
	}
}

func (s *shadow) choice(c *sim.Cluster, t sim.Task, ch sim.Choice, ok bool, model string, took time.Duration) shadowlog.Choice {
	out := shadowlog.Choice{Model: model, Placed: ok, LatencyUS: float64(took.Nanoseconds()) / 1e3}
	if ok {
		out.Node, out.GPUs, out.FragDelta = c.Node(ch.Node).Name, ch.GPUs.Indices(), c.FragDelta(t, ch)
	}
	return out
}

// close stops taking questions, answers those queued and closes the log.
func (s *shadow) close() {
	s.closeMu.Do(func() { close(s.jobs) })
	<-s.done
}
