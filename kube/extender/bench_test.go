package extender_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/kube/kubetest"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// BenchmarkFilterPrioritize is one scheduling decision as kube-scheduler asks for it at the
// openb cluster's size (1,213 nodes): a filter and a prioritize request over loopback HTTP,
// each for a new pod of the seeded workload (so the cluster fills as it runs), with every
// node name in the request (nodeCacheCapable). p99-ms is the 99th percentile of the pair.
func BenchmarkFilterPrioritize(b *testing.B) {
	p := experiment(b)
	s := kubetest.Serve(b, p.Nodes, p.Model, seed, false)
	names := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		names[i] = n.Name
	}
	client := &http.Client{}
	post := func(verb string, args *extenderv1.ExtenderArgs) {
		body, _ := json.Marshal(args)
		resp, err := client.Post(s.URL+"/"+verb, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		task := p.Workload[i%len(p.Workload)]
		pod := kube.PodObject(task, "default", fmt.Sprintf("bench-%d", i))
		pod.UID = types.UID(pod.Name)
		pod.Spec.SchedulerName = corev1.DefaultSchedulerName
		args := &extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names}
		post("filter", args)
		post("prioritize", args)
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkShadowCopy is what a shadow adds to a filter request: copying the openb cluster
// (1,213 nodes) with 300 pods of the seeded workload running.
func BenchmarkShadowCopy(b *testing.B) {
	p := experiment(b)
	c, err := sim.NewCluster(p.Nodes, p.Model)
	if err != nil {
		b.Fatal(err)
	}
	fgd, _ := policy.NewPlacer("fgd")
	if _, err := sim.RunArrivals(c, p.Workload[:300], fgd, sim.RNG(seed, sim.StreamPolicy), nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		_ = c.Clone()
	}
}
