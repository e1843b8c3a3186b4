package executor

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/registry"
)

// requestTimeout bounds each call to the API server.
const requestTimeout = 30 * time.Second

// logLines is how much of a failed shard's log an error quotes.
const logLines = 20

// Kubernetes runs work as an Indexed Job: pod I runs shard I of N (JOB_COMPLETION_INDEX),
// Parallelism at a time, each index retried Retries times (backoffLimitPerIndex), and writes
// its part to the registry's store, where Run reads it back.
type Kubernetes struct {
	cfg    config.ExecutorConfig
	store  config.RegistryConfig
	client kubernetes.Interface
	parts  registry.Backend
	log    *slog.Logger
	// poll is how often the Job's status is read.
	poll time.Duration
}

// NewKubernetes connects to the cluster of cfg.Kubeconfig ($KUBECONFIG, else in-cluster)
// and opens the store; the store must be s3://, which the pods reach too.
func NewKubernetes(cfg config.ExecutorConfig, store config.RegistryConfig, log *slog.Logger) (*Kubernetes, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("pipeline.%w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	if !strings.HasPrefix(store.Store, "s3://") {
		return nil, fmt.Errorf("pipeline.executor.kind: kubernetes needs an s3:// registry.store for the pods' parts, got %q", store.Store)
	}
	if err := store.Validate(); err != nil {
		return nil, fmt.Errorf("registry.%w", err)
	}
	path := cfg.Kubeconfig
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	var rc *rest.Config
	var err error
	if path != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", path)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("pipeline.executor.kubeconfig: %w", err)
	}
	rc.Timeout = requestTimeout
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("pipeline.executor.kubeconfig: %w", err)
	}
	parts, err := registry.OpenBackend(store)
	if err != nil {
		return nil, err
	}
	return &Kubernetes{cfg: cfg, store: store, client: client, parts: parts, log: log, poll: time.Second}, nil
}

// Run creates the Job, follows it to completion within cfg.Timeout and returns the parts.
// A Job that failed or ran out of time is deleted (its pods with it); a completed one is
// kept for its ttlSecondsAfterFinished, so `kubectl` can show what ran.
func (k *Kubernetes) Run(ctx context.Context, w Work) ([][]byte, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, k.cfg.Timeout,
		fmt.Errorf("not done within %v (pipeline.executor.timeout)", k.cfg.Timeout))
	defer cancel()
	suffix := make([]byte, 4)
	rand.Read(suffix)
	name := "schedrl-" + w.Name + "-" + hex.EncodeToString(suffix)
	prefix := "parts/" + name
	job := k.job(name, prefix, w)
	where := fmt.Sprintf("kubernetes job %s/%s", k.cfg.Namespace, name)
	if _, err := k.client.BatchV1().Jobs(k.cfg.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("%s: create: %w", where, err)
	}
	k.log.Info("executor: job created", "job", k.cfg.Namespace+"/"+name, "shards", w.Shards, "parallelism", k.cfg.Parallelism, "image", k.cfg.Image)
	if err := k.wait(ctx, name, where, w); err != nil {
		k.deleteJob(name)
		return nil, err
	}
	parts, err := k.readParts(ctx, prefix, w.Shards)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	k.deleteParts(prefix, w.Shards)
	return parts, nil
}

func (k *Kubernetes) job(name, prefix string, w Work) *batchv1.Job {
	labels := map[string]string{"app.kubernetes.io/name": "schedrl", "schedrl.io/work": w.Name}
	args := append(append([]string{}, w.Args...),
		// The kubelet expands $(JOB_COMPLETION_INDEX) from the variable the Job controller sets.
		"--shard", "$(JOB_COMPLETION_INDEX)/"+strconv.Itoa(w.Shards), "--part", prefix)
	env := []corev1.EnvVar{
		{Name: "SCHEDRL_REGISTRY_STORE", Value: k.store.Store},
		{Name: "SCHEDRL_REGISTRY_S3_ENDPOINT", Value: k.store.S3.Endpoint},
		{Name: "SCHEDRL_REGISTRY_S3_REGION", Value: k.store.S3.Region},
		{Name: "SCHEDRL_REGISTRY_S3_TLS", Value: strconv.FormatBool(k.store.S3.TLS)},
	}
	var envFrom []corev1.EnvFromSource
	if k.cfg.Secret != "" {
		envFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: k.cfg.Secret}}}}
	}
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	// CPU is requested, not limited: a limit throttles a simulation that could use idle cores.
	if r := k.cfg.Resources; r.CPU != "" {
		res.Requests[corev1.ResourceCPU] = resource.MustParse(r.CPU)
	}
	if r := k.cfg.Resources; r.Memory != "" {
		res.Requests[corev1.ResourceMemory] = resource.MustParse(r.Memory)
		res.Limits[corev1.ResourceMemory] = resource.MustParse(r.Memory)
	}
	if g := k.cfg.Resources.GPU; g > 0 {
		res.Limits["nvidia.com/gpu"] = *resource.NewQuantity(int64(g), resource.DecimalSI)
	}
	dns := corev1.DNSClusterFirst
	if k.cfg.HostNetwork {
		dns = corev1.DNSClusterFirstWithHostNet
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.cfg.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode:       ptr.To(batchv1.IndexedCompletion),
			Completions:          ptr.To(int32(w.Shards)),
			Parallelism:          ptr.To(int32(k.cfg.Parallelism)),
			BackoffLimitPerIndex: ptr.To(int32(k.cfg.Retries)),
			// One shard out of retries fails the Job at once: its result cannot be merged.
			MaxFailedIndexes:        ptr.To[int32](0),
			TTLSecondsAfterFinished: ptr.To[int32](3600),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, HostNetwork: k.cfg.HostNetwork, DNSPolicy: dns,
					EnableServiceLinks: ptr.To(false),
					// As deploy/k8s runs the image: user 65532, RuntimeDefault seccomp, read-only root.
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name: "shard", Image: k.cfg.Image, ImagePullPolicy: corev1.PullIfNotPresent,
						Args: args, Env: env, EnvFrom: envFrom, Resources: res,
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}

// wait follows the Job until it completes, reporting shards done as they change.
func (k *Kubernetes) wait(ctx context.Context, name, where string, w Work) error {
	done := -1
	var lastErr error
	for {
		j, err := k.client.BatchV1().Jobs(k.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if n := int(j.Status.Succeeded); n != done {
				done = n
				if w.Progress != nil {
					w.Progress(n, w.Shards)
				} else {
					k.log.Info("executor: shards done", "job", name, "done", fmt.Sprintf("%d/%d", n, w.Shards), "failed_pods", j.Status.Failed)
				}
			}
			for _, c := range j.Status.Conditions {
				if c.Status != corev1.ConditionTrue {
					continue
				}
				switch c.Type {
				case batchv1.JobComplete:
					return nil
				case batchv1.JobFailed:
					return fmt.Errorf("%s failed (%s: %s)%s", where, c.Reason, c.Message, k.failedShards(j))
				}
			}
		}
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%s was deleted before it completed (%d of %d shards done)", where, max(done, 0), w.Shards)
		}
		lastErr = err
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("%s: %v: %d of %d shards done", where, context.Cause(ctx), max(done, 0), w.Shards)
			if lastErr != nil {
				msg += fmt.Sprintf(" (last status read: %v)", lastErr)
			}
			return errors.New(msg)
		case <-time.After(k.poll):
		}
	}
}

// failedShards names each failed index with its last pod's state and the end of its log.
func (k *Kubernetes) failedShards(j *batchv1.Job) string {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	failed := ""
	if j.Status.FailedIndexes != nil {
		failed = *j.Status.FailedIndexes
	}
	pods, err := k.client.CoreV1().Pods(k.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + j.Name})
	if err != nil {
		return fmt.Sprintf(": failed shards %s (pods not listed: %v)", failed, err)
	}
	// The newest pod of each failed index.
	last := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		i := p.Labels["batch.kubernetes.io/job-completion-index"]
		if p.Status.Phase != corev1.PodFailed || !inIndexes(failed, i) {
			continue
		}
		if q, ok := last[i]; !ok || q.CreationTimestamp.Before(&p.CreationTimestamp) {
			last[i] = p
		}
	}
	var b strings.Builder
	tries := "once"
	if k.cfg.Retries > 0 {
		tries = fmt.Sprintf("%d times", k.cfg.Retries+1)
	}
	fmt.Fprintf(&b, ": failed shards %s (each tried %s)", failed, tries)
	indexes := make([]string, 0, len(last))
	for i := range last {
		indexes = append(indexes, i)
	}
	sort.Slice(indexes, func(a, c int) bool { x, _ := strconv.Atoi(indexes[a]); y, _ := strconv.Atoi(indexes[c]); return x < y })
	for _, i := range indexes {
		p := last[i]
		state := string(p.Status.Phase)
		for _, s := range p.Status.ContainerStatuses {
			if t := s.State.Terminated; t != nil {
				state = fmt.Sprintf("%s, exit %d", t.Reason, t.ExitCode)
			}
		}
		fmt.Fprintf(&b, "\nshard %s, pod %s (%s), last lines of its log:\n", i, p.Name, state)
		log, err := k.client.CoreV1().Pods(k.cfg.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: ptr.To[int64](logLines)}).DoRaw(ctx)
		if err != nil {
			fmt.Fprintf(&b, "  (log not read: %v)\n", err)
			continue
		}
		for _, line := range strings.Split(strings.TrimRight(string(log), "\n"), "\n") {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// inIndexes tells whether index i is in a Job's index list ("1,3-5").
func inIndexes(list, i string) bool {
	n, err := strconv.Atoi(i)
	if err != nil {
		return false
	}
	for _, r := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if !isRange {
			b, err2 = a, err1
		}
		if err1 == nil && err2 == nil && a <= n && n <= b {
			return true
		}
	}
	return false
}

func (k *Kubernetes) deleteJob(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	err := k.client.BatchV1().Jobs(k.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil {
		k.log.Warn("executor: job not deleted", "job", name, "err", err)
	}
}

// PartKey is where shard i writes its part under prefix: named by the part's sha256, so a
// reader checks what it got, and a retried pod that wrote different bytes shows.
func PartKey(prefix string, shard int, data []byte) string {
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%s/%d-%s.json", prefix, shard, hex.EncodeToString(sum[:]))
}

// CheckStore lists the parts' prefix, so a pod without access to the store fails before its
// work rather than after it.
func CheckStore(ctx context.Context, store config.RegistryConfig, prefix string) error {
	b, err := registry.OpenBackend(store)
	if err != nil {
		return err
	}
	_, err = b.List(ctx, prefix+"/")
	return err
}

// WritePart stores a shard's part (the pod's side of Run).
func WritePart(ctx context.Context, store config.RegistryConfig, prefix string, shard int, data []byte) error {
	b, err := registry.OpenBackend(store)
	if err != nil {
		return err
	}
	err = b.Create(ctx, PartKey(prefix, shard, data), bytes.NewReader(data), int64(len(data)))
	if errors.Is(err, registry.ErrExists) { // the same bytes, from an earlier try of this shard
		return nil
	}
	return err
}

// readParts reads every shard's part and checks it against its name.
func (k *Kubernetes) readParts(ctx context.Context, prefix string, shards int) ([][]byte, error) {
	names, err := k.parts.List(ctx, prefix+"/")
	if err != nil {
		return nil, fmt.Errorf("parts: %w", err)
	}
	byShard := map[int][]string{}
	for _, n := range names {
		i, rest, ok := strings.Cut(n, "-")
		s, err := strconv.Atoi(i)
		if !ok || err != nil || !strings.HasSuffix(rest, ".json") {
			continue
		}
		byShard[s] = append(byShard[s], n)
	}
	parts := make([][]byte, shards)
	for s := range shards {
		switch len(byShard[s]) {
		case 0:
			return nil, fmt.Errorf("shard %d/%d: the Job completed but no part is under %s", s, shards, k.parts.URI(prefix+"/"))
		case 1:
		default:
			return nil, fmt.Errorf("shard %d/%d: tries wrote different parts %v: the work is not deterministic", s, shards, byShard[s])
		}
		key := prefix + "/" + byShard[s][0]
		r, err := k.parts.Get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("shard %d/%d: %w", s, shards, err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("shard %d/%d: %s: %w", s, shards, k.parts.URI(key), err)
		}
		if PartKey(prefix, s, data) != key {
			return nil, fmt.Errorf("shard %d/%d: %s does not hold the bytes its name's sha256 says", s, shards, k.parts.URI(key))
		}
		parts[s] = data
	}
	return parts, nil
}

// deleteParts removes the parts once merged; a left-over is only garbage, so failures are
// logged, not returned.
func (k *Kubernetes) deleteParts(prefix string, shards int) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	names, err := k.parts.List(ctx, prefix+"/")
	for _, n := range names {
		if err == nil {
			err = k.parts.Delete(ctx, prefix+"/"+n)
		}
	}
	if err != nil {
		k.log.Warn("executor: parts not deleted", "prefix", k.parts.URI(prefix+"/"), "shards", shards, "err", err)
	}
}
