package main

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schedrl/schedrl/internal/testserver"
)

// executorImage is the image the kubernetes executor's tests run their pods from.
const executorImage = "docker.io/schedrl/schedrl:executor-test"

// executorCluster is the one node the kubernetes executor's tests of this process share
// (starting one and building the image takes minutes): the control plane with its default
// scheduler, a node that holds schedrl's image, MinIO where the node's pods reach it (the
// machine's end of the node's veth pair), its bucket "parts", and the Secret "store" that gives
// the pods MinIO's credentials. The node test of `serve` keeps a node of its own: it creates
// openb Node objects, on which the default scheduler would place the Jobs' pods.
type executorCluster struct {
	kube       *testserver.Kube
	node       *testserver.Node
	minio      *testserver.MinIO
	client     kubernetes.Interface
	kubeconfig string
	imageDir   string
}

var (
	sharedNodeOnce sync.Once
	sharedNode     *executorCluster
	sharedNodeErr  error
)

// executorNode returns the shared node, starting it on the first call; TestMain closes it.
func executorNode(t *testing.T) *executorCluster {
	t.Helper()
	if os.Getenv("CGO_ENABLED") == "0" || os.Geteuid() != 0 {
		t.Skip("needs root and cgo: it runs a kubelet node and builds schedrl's image")
	}
	sharedNodeOnce.Do(func() {
		start := time.Now()
		sharedNode, sharedNodeErr = startExecutorCluster()
		if sharedNodeErr == nil {
			t.Logf("shared node, image and MinIO ready in %s", time.Since(start).Round(time.Second))
		}
	})
	if sharedNodeErr != nil {
		t.Fatal(sharedNodeErr)
	}
	return sharedNode
}

// closeSharedNode stops the shared node if a test started it.
func closeSharedNode() {
	if sharedNode != nil {
		sharedNode.close()
	}
}

func startExecutorCluster() (c *executorCluster, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c = &executorCluster{}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	if c.imageDir, err = os.MkdirTemp("", "schedrl-executor-image-"); err != nil {
		return nil, err
	}
	// The image builds while the node starts.
	type built struct {
		archive string
		err     error
	}
	image := make(chan built, 1)
	go func() {
		archive, err := testserver.BuildImage(ctx, c.imageDir, executorImage)
		image <- built{archive, err}
	}()
	// Every return below waits for the build, which writes into imageDir.
	wait := func(err error) error { b := <-image; return errors.Join(err, b.err) }
	if c.kube, err = testserver.StartKube(); err != nil {
		return nil, wait(err)
	}
	if err = c.kube.StartScheduler(testserver.Extender{}); err != nil {
		return nil, wait(err)
	}
	if c.node, err = c.kube.StartNode(ctx); err != nil {
		return nil, wait(err)
	}
	b := <-image
	if b.err != nil {
		return nil, b.err
	}
	if err = c.node.ImportImage(ctx, b.archive); err != nil {
		return nil, err
	}
	if c.minio, err = testserver.StartMinIOOn(c.node.HostIP); err != nil {
		return nil, err
	}
	if err = c.minio.MakeBucket("parts"); err != nil {
		return nil, err
	}
	if c.client, err = c.kube.Client(); err != nil {
		return nil, err
	}
	if c.kubeconfig, err = c.kube.Kubeconfig(); err != nil {
		return nil, err
	}
	if err = c.secret(ctx, "store", c.minio.AccessKey, c.minio.SecretKey); err != nil {
		return nil, err
	}
	return c, nil
}

// secret creates a Secret that gives pods these store credentials.
func (c *executorCluster) secret(ctx context.Context, name, accessKey, secretKey string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey}}
	_, err := c.client.CoreV1().Secrets("default").Create(ctx, s, metav1.CreateOptions{})
	return err
}

// driverEnv gives a driver the store's credentials through its environment, as a user would.
// kubernetesFlags point a pipeline run at the shared node: 2 pods at a time, each a tenth of a
// core and 1 GiB, the store's credentials from the Secret "store".
func (c *executorCluster) kubernetesFlags() []string {
	return []string{"--set", "pipeline.executor.kind=kubernetes", "--set", "pipeline.executor.kubeconfig=" + c.kubeconfig,
		"--set", "pipeline.executor.image=" + executorImage, "--set", "pipeline.executor.parallelism=2",
		"--set", "pipeline.executor.timeout=15m", "--set", "pipeline.executor.secret=store",
		"--set", "pipeline.executor.resources.cpu=100m", "--set", "pipeline.executor.resources.memory=1Gi"}
}

func (c *executorCluster) driverEnv() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + c.minio.AccessKey, "AWS_SECRET_ACCESS_KEY=" + c.minio.SecretKey}
}

func (c *executorCluster) close() {
	if c.minio != nil {
		c.minio.Close()
	}
	if c.node != nil {
		c.node.Close()
	}
	if c.kube != nil {
		c.kube.Close()
	}
	if c.imageDir != "" {
		os.RemoveAll(c.imageDir)
	}
}

// newJobs returns the Jobs of work (the schedrl.io/work label) not among before's names.
func newJobs(ctx context.Context, t *testing.T, client kubernetes.Interface, work string, before map[string]bool) []string {
	t.Helper()
	jobs, err := client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: "schedrl.io/work=" + work})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs.Items {
		if !before[j.Name] {
			names = append(names, j.Name)
		}
	}
	return names
}

// jobNames are the names of the Jobs of work now.
func jobNames(ctx context.Context, t *testing.T, client kubernetes.Interface, work string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, n := range newJobs(ctx, t, client, work, nil) {
		names[n] = true
	}
	return names
}
