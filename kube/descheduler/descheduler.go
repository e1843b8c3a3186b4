// Package descheduler is schedrl's defragmentation controller, in the manner of the
// Kubernetes descheduler: every interval it snapshots the cluster model (kube.Mirror), plans
// migrations with a defrag planner (a heuristic or the trained agent) within a budget, and
// carries them out as evictions through the Eviction API, so PodDisruptionBudgets are
// respected; the pod's owner re-creates it and the scheduler (with the extender) places it.
//
// Dry-run, the default, evicts nothing: it reports the plan as Events on the pods it would
// move and in its log. A token bucket caps evictions per hour across rounds.
package descheduler

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// Component is the Events' source.
const Component = "schedrl-defrag"

// Event reasons.
const (
	ReasonPlanned = "DefragPlanned" // dry-run: would be evicted
	ReasonEvicted = "DefragEvicted"
	ReasonRefused = "DefragRefused" // the API server refused the eviction (a PDB, usually)
	ReasonLimited = "DefragRateLimited"
)

// Options configure a Controller.
type Options struct {
	Client  kubernetes.Interface
	Mirror  *kube.Mirror
	Planner defrag.Planner
	// Placer is the placement policy the plan assumes will re-place evicted pods (the
	// extender's), and that places pending pods in the plan's measure.
	Placer policy.Placer
	// Defrag holds the budget (migrations per round) and reward weights.
	Defrag  env.DefragOptions
	Samples int
	Seed    uint64
	// Interval between rounds in Run.
	Interval time.Duration
	// Evict turns dry-run off.
	Evict bool
	// MaxPerHour caps evictions per hour (a token bucket with that burst).
	MaxPerHour int
	// GracePeriod of the evicted pods' deletion; nil keeps each pod's own.
	GracePeriod *int64
	APITimeout  time.Duration
	Log         *slog.Logger
}

// Controller runs defragmentation rounds.
type Controller struct {
	opts    Options
	limiter *rate.Limiter
	round   int
}

// Report is one round's outcome.
type Report struct {
	Plan defrag.Plan
	// Promised is the plan's outcome for the migrations carried out (the plan replayed
	// without the refused and rate-limited ones); the plan's own when all went ahead.
	Promised defrag.Outcome
	Evicted  []defrag.Migration // in plan order
	Refused  map[string]string  // task -> the API server's reason
	Limited  []string           // tasks skipped by the hourly limit
	DryRun   bool
}

// New builds a controller.
func New(opts Options) (*Controller, error) {
	if opts.Defrag.Budget < 1 {
		return nil, fmt.Errorf("descheduler: budget %d: must be >= 1", opts.Defrag.Budget)
	}
	if opts.MaxPerHour < 1 {
		return nil, fmt.Errorf("descheduler: max evictions per hour %d: must be >= 1", opts.MaxPerHour)
	}
	if opts.Samples < 1 {
		opts.Samples = 1
	}
	if opts.APITimeout <= 0 {
		opts.APITimeout = 10 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Controller{opts: opts, limiter: rate.NewLimiter(rate.Every(time.Hour/time.Duration(opts.MaxPerHour)), opts.MaxPerHour)}, nil
}

// Run plays a round every interval until ctx ends; a failed round is logged, not fatal.
func (c *Controller) Run(ctx context.Context) error {
	t := time.NewTicker(c.opts.Interval)
	defer t.Stop()
	for {
		if _, err := c.Once(ctx); err != nil {
			c.opts.Log.Warn("defrag round failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Once plays one round: snapshot, plan, then evict (or, in dry-run, report) each migration.
func (c *Controller) Once(ctx context.Context) (Report, error) {
	c.round++
	rep := Report{Refused: map[string]string{}, DryRun: !c.opts.Evict}
	var pr defrag.Problem
	pods := map[string]*corev1.Pod{}
	err := c.opts.Mirror.Do(func(cl *sim.Cluster, tx kube.Txn) error {
		var pending []sim.Task
		for _, p := range tx.Pending() {
			if t, err := kube.TaskOf(p); err == nil {
				pending = append(pending, t)
			}
		}
		for _, p := range cl.Placements() {
			if pod, ok := tx.Pod(p.Task.Name); ok {
				pods[p.Task.Name] = pod
			}
		}
		pr = defrag.Problem{Cluster: cl.Clone(), Pending: pending, Placer: c.opts.Placer, Options: c.opts.Defrag}
		return nil
	})
	if err != nil {
		return rep, err
	}
	plan, err := defrag.Best(pr, c.opts.Planner, c.opts.Samples, c.opts.Seed+uint64(c.round))
	if err != nil {
		return rep, err
	}
	rep.Plan = plan
	c.opts.Log.Info("defrag plan", "round", c.round, "method", plan.Method, "migrations", len(plan.Steps),
		"frag_before", plan.Before.FragGPU, "frag_after", plan.After.FragGPU, "dry_run", rep.DryRun)
	for _, st := range plan.Steps {
		pod, ok := pods[st.Task]
		if !ok {
			continue // an assumed, not yet bound pod: nothing to evict
		}
		msg := fmt.Sprintf("move from %s GPUs %v to %s GPUs %v (plan: fragment %.2f -> %.2f GPUs)", st.FromNode, st.FromGPUs,
			st.ToNode, st.ToGPUs, plan.Before.FragGPU, plan.After.FragGPU)
		c.opts.Log.Info("defrag migration", "pod", st.Task, "from", st.FromNode, "to", st.ToNode, "dry_run", rep.DryRun)
		switch {
		case !c.opts.Evict:
			c.event(ctx, pod, ReasonPlanned, "dry-run: would "+msg)
		case !c.limiter.Allow():
			rep.Limited = append(rep.Limited, st.Task)
			c.event(ctx, pod, ReasonLimited, fmt.Sprintf("not evicted: %d evictions per hour used; would %s", c.opts.MaxPerHour, msg))
		default:
			if err := c.evict(ctx, pod); err != nil {
				rep.Refused[st.Task] = err.Error()
				c.event(ctx, pod, ReasonRefused, "eviction refused: "+err.Error())
				continue
			}
			rep.Evicted = append(rep.Evicted, st.Migration)
			c.event(ctx, pod, ReasonEvicted, "evicted to "+msg)
		}
	}
	rep.Promised = plan.After
	if rep.DryRun || len(rep.Evicted) == len(plan.Steps) {
		return rep, nil
	}
	done, err := defrag.Replay(pr, plan.Method, rep.Evicted)
	if err != nil {
		// A later migration needed the room a refused one would have freed.
		c.opts.Log.Warn("defrag: the carried-out migrations do not replay on their own", "err", err)
		return rep, nil
	}
	rep.Promised = done.After
	return rep, nil
}

// evict asks the Eviction API to evict the pod (its UID as precondition); a
// PodDisruptionBudget that does not allow it makes the API server refuse (429).
func (c *Controller) evict(ctx context.Context, pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.APITimeout)
	defer cancel()
	uid := pod.UID
	err := c.opts.Client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: c.opts.GracePeriod, Preconditions: &metav1.Preconditions{UID: &uid}},
	})
	if apierrors.IsTooManyRequests(err) {
		return fmt.Errorf("disruption budget: %w", err)
	}
	return err
}

// event records an Event on the pod; failing to is logged only.
func (c *Controller) event(ctx context.Context, pod *corev1.Pod, reason, msg string) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.APITimeout)
	defer cancel()
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Reason: reason, Message: msg, Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: Component},
		FirstTimestamp: now, LastTimestamp: now, Count: 1, ReportingController: Component, ReportingInstance: Component,
	}
	if reason == ReasonRefused {
		ev.Type = corev1.EventTypeWarning
	}
	if _, err := c.opts.Client.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		c.opts.Log.Warn("defrag: record event", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
}
