// Package extender is a kube-scheduler extender (the HTTP protocol of
// k8s.io/kube-scheduler/extender/v1) that places pods with a schedrl placer: a heuristic such
// as FGD or a trained network, on a live model of the cluster (kube.Mirror).
//
// Filter makes the decision, as HAMi's extender does: it runs the placer once per pod, assumes
// the chosen node and GPUs in the model, and returns that node alone, so the scheduler's own
// scoring cannot overrule it. Prioritize gives that node the top score. Bind writes the GPU
// indices as the gpu-index annotation (for a device plugin to honour) on the Binding it
// creates, which the API server copies onto the pod as it binds it. A pod whose request is malformed fails filter on every node with the reason, which
// the scheduler shows in the pod's FailedScheduling event.
package extender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/sim"
)

// Options configure a Server.
type Options struct {
	Client kubernetes.Interface
	Mirror *kube.Mirror
	Placer sim.Placer
	// Seed seeds the placer's random draws (its sim.StreamPolicy stream, as `schedrl sim`).
	Seed uint64
	// Model names what decides, for the model-version metric: "fgd", or a registry version.
	Model string
	// APITimeout bounds each call to the API server (default 10 s).
	APITimeout time.Duration
	// MaxBody bounds a request's body (default DefaultMaxBody); a larger one gets 413.
	MaxBody int64
	// Shadow, if set, asks a candidate placer every question Placer answers (off the
	// request's path) and records both; see ShadowOptions.
	Shadow *ShadowOptions
	Log    *slog.Logger
}

// Server answers the extender verbs on /filter, /prioritize and /bind, with /healthz and
// Prometheus /metrics.
type Server struct {
	opts    Options
	rng     *rand.Rand // used under the mirror's lock
	reg     *prometheus.Registry
	decided *prometheus.CounterVec
	latency *prometheus.HistogramVec
	info    *prometheus.GaugeVec
	// placer and model decide; SetPlacer replaces them under the mirror's lock, so each
	// request is answered wholly by one placer.
	placer sim.Placer
	model  string
	shadow *shadow // nil without Options.Shadow, or once closed; read under the mirror's lock
}

// LatencyMetric is the name of the per-verb latency histogram.
const LatencyMetric = "schedrl_extender_latency_seconds"

// New builds a server.
func New(opts Options) *Server {
	if opts.APITimeout <= 0 {
		opts.APITimeout = 10 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	s := &Server{opts: opts, rng: sim.RNG(opts.Seed, sim.StreamPolicy), reg: prometheus.NewRegistry(),
		placer: opts.Placer, model: opts.Model}
	s.decided = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schedrl_extender_decisions_total",
		Help: "Extender answers by verb and result (placed, unschedulable, malformed, bound, error)."}, []string{"verb", "result"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: LatencyMetric,
		Help: "Time to answer one extender request, by verb.",
		// Fine around the 5 ms target, where the p99 is read.
		Buckets: []float64{.0001, .00025, .0005, .001, .002, .003, .004, .005, .0075, .01, .025, .05, .1, .25, 1}}, []string{"verb"})
	s.info = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "schedrl_extender_model_info",
		Help: "The placer deciding: policy name and model version (value 1)."}, []string{"placer", "model"})
	s.info.WithLabelValues(opts.Placer.Name(), opts.Model).Set(1)
	s.reg.MustRegister(s.decided, s.latency, s.info, prometheus.NewGoCollector())
	if opts.Shadow != nil {
		s.shadow = newShadow(*opts.Shadow, s.reg)
	}
	return s
}

// SetPlacer makes p (named model) decide from the next request on; a request being answered
// finishes with the placer it began with, and pods already assumed keep their choice.
func (s *Server) SetPlacer(p sim.Placer, model string) {
	s.opts.Mirror.Do(func(*sim.Cluster, kube.Txn) error {
		s.placer, s.model = p, model
		return nil
	})
	s.info.Reset()
	s.info.WithLabelValues(p.Name(), model).Set(1)
}

// Model names the placer deciding now.
func (s *Server) Model() string {
	var m string
	s.opts.Mirror.Do(func(*sim.Cluster, kube.Txn) error { m = s.model; return nil })
	return m
}

// Close stops the shadow, if any, once its queued questions are answered and its log closed.
// Call it after Serve returns.
func (s *Server) Close() {
	var sh *shadow
	s.opts.Mirror.Do(func(*sim.Cluster, kube.Txn) error {
		sh, s.shadow = s.shadow, nil
		return nil
	})
	if sh != nil {
		sh.close()
	}
}

// Metrics is the server's metric registry (served on /metrics).
func (s *Server) Metrics() *prometheus.Registry { return s.reg }

// Handler routes the extender's endpoints, /metrics included.
func (s *Server) Handler() http.Handler { return s.HandlerFor(Routes{Metrics: true}) }

// Routes choose what HandlerFor serves beside the verbs and /healthz.
type Routes struct {
	Metrics bool // /metrics too (false: served on its own address, MetricsHandler)
	// VerifiedClients answers the verbs only over TLS with a client certificate the server's
	// client CA verified (the scheduler's); others get 401.
	VerifiedClients bool
}

// HandlerFor routes the verbs, /healthz and, with r.Metrics, /metrics.
func (s *Server) HandlerFor(r Routes) http.Handler {
	mux := http.NewServeMux()
	for name, f := range map[string]func(context.Context, []byte) (any, string){"filter": s.filter, "prioritize": s.prioritize, "bind": s.bind} {
		h := s.verb(name, f)
		if r.VerifiedClients {
			h = verifiedOnly(h)
		}
		mux.Handle("POST /"+name, h)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.opts.Mirror.Synced() {
			http.Error(w, "informers not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if r.Metrics {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	}
	return mux
}

// verifiedOnly refuses a request without a verified client certificate.
func verifiedOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "schedrl: a client certificate signed by --tls-client-ca-file is required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// DefaultMaxBody bounds a request body unless Options.MaxBody says otherwise: ExtenderArgs
// with full Node objects of a few thousand nodes.
const DefaultMaxBody = 64 << 20

// verb decodes the request into a fresh value, answers, and records result and latency.
func (s *Server) verb(name string, f func(ctx context.Context, body []byte) (any, string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
		var out any
		result := "error"
		if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
			// An error status, not a 200 with Error set: the sender learns it before parsing.
			http.Error(w, fmt.Sprintf("schedrl: request body over %d bytes", tooBig.Limit), http.StatusRequestEntityTooLarge)
			s.decided.WithLabelValues(name, "too-large").Inc()
			return
		}
		if err != nil {
			out = map[string]string{"Error": "schedrl: read request: " + err.Error()}
		} else {
			out, result = f(r.Context(), body)
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(out); err != nil {
			s.opts.Log.Warn("extender: write answer", "verb", name, "err", err)
		}
		s.decided.WithLabelValues(name, result).Inc()
		s.latency.WithLabelValues(name).Observe(time.Since(start).Seconds())
	})
}

// nodeNames are the candidate nodes of a request (names only with nodeCacheCapable).
func nodeNames(args *extenderv1.ExtenderArgs) []string {
	if args.NodeNames != nil {
		return *args.NodeNames
	}
	var out []string
	if args.Nodes != nil {
		for _, n := range args.Nodes.Items {
			out = append(out, n.Name)
		}
	}
	return out
}

// failAll fails every candidate with one reason; resolvable reasons may change as pods leave.
func failAll(names []string, reason string, resolvable bool) *extenderv1.ExtenderFilterResult {
	m := make(extenderv1.FailedNodesMap, len(names))
	for _, n := range names {
		m[n] = reason
	}
	res := &extenderv1.ExtenderFilterResult{NodeNames: &[]string{}}
	if resolvable {
		res.FailedNodes = m
	} else {
		res.FailedAndUnresolvableNodes = m
	}
	return res
}

func (s *Server) filter(_ context.Context, body []byte) (any, string) {
	var args extenderv1.ExtenderArgs
	if err := json.Unmarshal(body, &args); err != nil || args.Pod == nil {
		return &extenderv1.ExtenderFilterResult{Error: fmt.Sprintf("schedrl: bad ExtenderArgs: %v", err)}, "error"
	}
	pod, names := args.Pod, nodeNames(&args)
	task, err := kube.TaskOf(pod)
	if err != nil {
		return failAll(names, "schedrl: malformed GPU request: "+err.Error(), false), "malformed"
	}
	var res *extenderv1.ExtenderFilterResult
	result := "placed"
	err = s.opts.Mirror.Do(func(c *sim.Cluster, tx kube.Txn) error {
		if node, ok := tx.BoundTo(pod); ok {
			// A pod updated while its bind was in flight comes back once; never place it twice.
			res, result = failAll(names, "schedrl: pod is already bound to "+node, false), "bound-already"
			return nil
		}
		ch, ok := tx.Assumed(pod)
		if !ok {
			start := time.Now()
			if ch, ok = s.placer.Place(c, task, s.rng); !ok {
				res, result = failAll(names, fmt.Sprintf("schedrl: no node has room for the pod's request (%s)", describe(task)), true), "unschedulable"
				return nil
			}
			took := time.Since(start)
			// The shadow's copy is the state the serving placer saw, before its choice.
			before := s.shadow.copyOf(c, took)
			if err := tx.Assume(pod, task, ch); err != nil {
				return fmt.Errorf("placer %s chose an infeasible placement: %w", s.placer.Name(), err)
			}
			s.shadow.offer(before, c.ID(), task, ch, s.model, took)
		}
		node := c.Node(ch.Node).Name
		if !slices.Contains(names, node) {
			tx.Forget(pod)
			res, result = failAll(names, fmt.Sprintf("schedrl: %s chose node %s, which the scheduler's own filters left out", s.placer.Name(), node), true), "unschedulable"
			return nil
		}
		res = &extenderv1.ExtenderFilterResult{NodeNames: &[]string{node}}
		return nil
	})
	if err != nil {
		return &extenderv1.ExtenderFilterResult{Error: "schedrl: " + err.Error()}, "error"
	}
	return res, result
}

// describe is a request in words, for reasons.
func describe(t sim.Task) string {
	out := fmt.Sprintf("cpu %dm, memory %dMi", t.CPU, t.Mem)
	switch {
	case t.NumGPU == 0:
	case t.Sharing():
		out += fmt.Sprintf(", %d milli of one GPU", t.GPUMilli)
	default:
		out += fmt.Sprintf(", %d whole GPUs", t.NumGPU)
	}
	if len(t.GPUTypes) > 0 {
		out += ", model " + t.Spec()
	}
	return out
}

func (s *Server) prioritize(_ context.Context, body []byte) (any, string) {
	var args extenderv1.ExtenderArgs
	if err := json.Unmarshal(body, &args); err != nil || args.Pod == nil {
		return extenderv1.HostPriorityList{}, "error"
	}
	var chosen string
	s.opts.Mirror.Do(func(c *sim.Cluster, tx kube.Txn) error {
		if ch, ok := tx.Assumed(args.Pod); ok {
			chosen = c.Node(ch.Node).Name
		}
		return nil
	})
	names := nodeNames(&args)
	out := make(extenderv1.HostPriorityList, len(names))
	for k, n := range names {
		out[k] = extenderv1.HostPriority{Host: n}
		if n == chosen {
			out[k].Score = extenderv1.MaxExtenderPriority
		}
	}
	return out, "scored"
}

func (s *Server) bind(ctx context.Context, body []byte) (any, string) {
	var args extenderv1.ExtenderBindingArgs
	if err := json.Unmarshal(body, &args); err != nil {
		return &extenderv1.ExtenderBindingResult{Error: "schedrl: bad ExtenderBindingArgs: " + err.Error()}, "error"
	}
	if err := s.bindPod(ctx, args); err != nil {
		s.opts.Log.Warn("extender: bind failed", "pod", args.PodNamespace+"/"+args.PodName, "node", args.Node, "err", err)
		return &extenderv1.ExtenderBindingResult{Error: "schedrl: " + err.Error()}, "error"
	}
	return &extenderv1.ExtenderBindingResult{}, "bound"
}

// bindPod binds to the node the scheduler chose: normally the assumed decision; otherwise
// (the extender restarted between filter and bind) the best-fit GPUs there, if any fit.
func (s *Server) bindPod(ctx context.Context, args extenderv1.ExtenderBindingArgs) error {
	ref := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: args.PodNamespace, Name: args.PodName, UID: args.PodUID}}
	var gpus sim.GPUSet
	err := s.opts.Mirror.Do(func(c *sim.Cluster, tx kube.Txn) error {
		if ch, ok := tx.Assumed(ref); ok && c.Node(ch.Node).Name == args.Node {
			gpus = ch.GPUs
			return nil
		}
		pod, ok := tx.Pod(kube.TaskName(ref))
		if !ok || pod.UID != args.PodUID {
			return fmt.Errorf("pod %s/%s (uid %s) is not known", args.PodNamespace, args.PodName, args.PodUID)
		}
		task, err := kube.TaskOf(pod)
		if err != nil {
			return err
		}
		i, ok := c.NodeIndex(args.Node)
		if !ok {
			return fmt.Errorf("node %s is not in the model", args.Node)
		}
		if gpus, ok = c.TightestGPUs(task, i); !ok {
			return fmt.Errorf("pod %s/%s does not fit on node %s", args.PodNamespace, args.PodName, args.Node)
		}
		return tx.Assume(pod, task, sim.Choice{Node: i, GPUs: gpus})
	})
	if err != nil {
		return err
	}
	if err := s.writeBinding(ctx, args, gpus); err != nil {
		s.opts.Mirror.Do(func(_ *sim.Cluster, tx kube.Txn) error { tx.Forget(ref); return nil })
		return err
	}
	return nil
}

// writeBinding creates the Binding with the gpu-index annotation on it: the API server copies
// a binding's annotations onto the pod in the same write that sets its node, so no pod is
// ever seen bound without its GPUs (or annotated but unbound). The UID guards against a
// re-created pod of the same name.
func (s *Server) writeBinding(ctx context.Context, args extenderv1.ExtenderBindingArgs, gpus sim.GPUSet) error {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: args.PodNamespace, Name: args.PodName, UID: args.PodUID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: args.Node},
	}
	if gpus != 0 {
		b.Annotations = map[string]string{kube.AnnotGPUIndex: kube.FormatGPUIndex(gpus)}
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.APITimeout)
	defer cancel()
	if err := s.opts.Client.CoreV1().Pods(args.PodNamespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}
