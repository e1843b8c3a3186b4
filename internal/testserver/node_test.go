package testserver

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestNodeRunsImageDoctorJob: a real node (containerd, runc, kubelet) runs `schedrl doctor`
// from schedrl's own image as a Job under the manifests' security settings (user 65532,
// RuntimeDefault seccomp, read-only root), the Job completes, and the pod's log, read through
// the API server from the kubelet, reports libtorch 2.1.
func TestNodeRunsImageDoctorJob(t *testing.T) {
	if os.Getenv("CGO_ENABLED") == "0" {
		t.Skip("runs in the cgo pass of make test: it builds schedrl, which links libtorch")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	const ref = "docker.io/schedrl/schedrl:node-test"
	archive, err := BuildImage(ctx, t.TempDir(), ref)
	if err != nil {
		t.Fatal(err)
	}

	k, err := StartKube()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if err := k.StartScheduler(Extender{}); err != nil {
		t.Fatal(err)
	}
	n, err := k.StartNode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.ImportImage(ctx, archive); err != nil {
		t.Fatal(err)
	}
	client, err := k.Client()
	if err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "doctor", Namespace: "default"},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				Containers: []corev1.Container{{
					Name: "doctor", Image: ref, ImagePullPolicy: corev1.PullNever, Args: []string{"doctor"},
					SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true)},
					// As in deploy/k8s: the root is read-only, /tmp (HOME) an emptyDir.
					VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
				}},
				Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			}},
		},
	}
	if _, err := client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		j, err := client.BatchV1().Jobs("default").Get(ctx, "doctor", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Succeeded == 1 {
			break
		}
		if j.Status.Failed > 0 || ctx.Err() != nil {
			t.Fatalf("job: %+v\npods:\n%s\nkubelet:\n%s", j.Status, describePods(ctx, client, "job-name=doctor"), n.KubeletLog())
		}
		time.Sleep(time.Second)
	}
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=doctor"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("job pods: %v (%v)", pods, err)
	}
	p := pods.Items[0]
	if p.Spec.NodeName != n.Name || p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod %s on %q in phase %s, want Succeeded on %s", p.Name, p.Spec.NodeName, p.Status.Phase, n.Name)
	}
	log, err := client.CoreV1().Pods("default").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^libtorch\s+2\.1\.`).Match(log) {
		t.Fatalf("doctor in the pod does not report libtorch 2.1:\n%s", log)
	}
	t.Logf("doctor in pod %s on %s:\n%s", p.Name, n.Name, log)
}

// describePods prints each pod's phase, container states and log, for a failure message.
func describePods(ctx context.Context, client kubernetes.Interface, selector string) string {
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "%s on %s: %s %+v\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses)
		log, err := client.CoreV1().Pods("default").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		fmt.Fprintf(&b, "log (%v):\n%s\n", err, log)
	}
	return b.String()
}
