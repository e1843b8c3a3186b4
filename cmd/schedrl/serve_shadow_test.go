package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/kube/kubetest"
	"github.com/schedrl/schedrl/kube/podlog"
	"github.com/schedrl/schedrl/kube/shadowlog"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/registry"
)

// publishNet publishes a freshly initialised network of envName (seeded) as a version of model.
func publishNet(t *testing.T, reg *registry.Registry, model, envName string, seed int64) registry.Version {
	t.Helper()
	spec, err := env.SpecOf(envName)
	if err != nil {
		t.Fatal(err)
	}
	var nc config.NetworkConfig
	nc.SetDefaults()
	nn.Seed(seed)
	n, err := nn.NewNet(nn.NewArch(spec, nc, 50), gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	if _, err := nn.SaveCheckpoint(ckpt, n, nn.Lineage{}); err != nil {
		t.Fatal(err)
	}
	v, err := reg.Publish(context.Background(), model, ckpt)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// scrape reads the extender's /metrics as name{labels} -> value.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[k+1:], 64); err == nil {
			out[line[:k]] = v
		}
	}
	return out
}

// waitMetrics scrapes until ok holds, failing after limit.
func waitMetrics(t *testing.T, addr string, limit time.Duration, what string, ok func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		m := scrape(t, addr)
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s never held; metrics:\n%v", limit, what, m)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// modelServing is the version the model-info metric names.
func modelServing(m map[string]float64) string {
	for k, v := range m {
		if strings.HasPrefix(k, "schedrl_extender_model_info{") && v == 1 {
			_, rest, _ := strings.Cut(k, `model="`)
			ref, _, _ := strings.Cut(rest, " ")
			return ref
		}
	}
	return ""
}

// TestServeExtenderShadowAndSwitch is issue 40's shadow acceptance in the test control plane,
// with the registry on a real MinIO: placement@1 serves (alias champion) and placement@2 runs
// as shadow (alias candidate) while the real kube-scheduler binds 300 openb pods through the
// extender; /metrics and `schedrl eval --shadow` then give agreement and fragment difference.
// A defrag network promoted to champion is refused and placement@1 kept; promoting
// placement@2 switches the serving model while 100 more pods are being bound, none failing.
func TestServeExtenderShadowAndSwitch(t *testing.T) {
	minio, err := testserver.StartMinIO()
	if err != nil {
		t.Fatal(err)
	}
	defer minio.Close()
	if err := minio.MakeBucket("shadow"); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Registry.Store = "s3://shadow/registry"
	cfg.Registry.S3.Endpoint, cfg.Registry.S3.AccessKey, cfg.Registry.S3.SecretKey = minio.Endpoint, minio.AccessKey, minio.SecretKey
	reg, err := registry.Open(cfg.Registry, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	publishNet(t, reg, "placement", env.PlacementName, 3)
	publishNet(t, reg, "placement", env.PlacementName, 4)
	publishNet(t, reg, "placement", env.DefragName, 5) // placement@3: cannot place
	for ref, alias := range map[string]string{"placement@1": "champion", "placement@2": "candidate"} {
		if _, err := reg.Promote(ctx, ref, alias); err != nil {
			t.Fatal(err)
		}
	}

	p, k, opts := openbExtenderCluster(ctx, t, cfg)
	addr := opts.Endpoint.Listener.Addr().String()
	shadowDir := t.TempDir()
	opts.shadowFlags = shadowFlags{Shadow: "placement@candidate", ShadowQueue: 1000, ShadowLog: shadowDir,
		ShadowLogBytes: 64 << 10, ModelPoll: 200 * time.Millisecond}
	spool := t.TempDir()
	opts.decisionLogFlags = decisionLogFlags{LogDir: "s3://shadow/decisions", LogSpool: spool, LogMaxBytes: 64 << 20,
		LogMaxAge: time.Hour, LogUploadGap: time.Hour}
	served := make(chan error, 1)
	go func() { served <- runServeExtender(ctx, &opts) }()
	if err := k.StartScheduler(testserver.Extender{URL: "http://" + addr}); err != nil {
		t.Fatal(err)
	}
	client, err := k.Client()
	if err != nil {
		t.Fatal(err)
	}
	first, err := kubetest.Submit(ctx, client, "default", p.Workload[:300], time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, k.SchedulerLog())
	}
	placed := 0
	for _, o := range first {
		if o.Bound {
			placed++
		}
	}
	shadowed := func(m map[string]float64) float64 {
		n := 0.0
		for _, r := range []string{"agree", "disagree", "unplaced", "dropped"} {
			n += m[`schedrl_shadow_decisions_total{result="`+r+`"}`]
		}
		return n
	}
	m := waitMetrics(t, addr, time.Minute, "every placed pod shadowed", func(m map[string]float64) bool { return shadowed(m) == float64(placed) })
	agreement, fragMean := m["schedrl_shadow_agreement"], m["schedrl_shadow_frag_difference_mean"]
	t.Logf("300 pods, %d placed: agreement %.4f, fragment difference %+.2f milli-GPU/pod (sum %+.1f), dropped %v; serving p50 %.0f us p99 %.0f us, shadow p50 %.0f us p99 %.0f us",
		placed, agreement, fragMean, m["schedrl_shadow_frag_difference_sum"], m[`schedrl_shadow_decisions_total{result="dropped"}`],
		1e6*m[`schedrl_shadow_place_latency_seconds{role="serving",quantile="0.5"}`], 1e6*m[`schedrl_shadow_place_latency_seconds{role="serving",quantile="0.99"}`],
		1e6*m[`schedrl_shadow_place_latency_seconds{role="shadow",quantile="0.5"}`], 1e6*m[`schedrl_shadow_place_latency_seconds{role="shadow",quantile="0.99"}`])
	if placed == 0 || agreement < 0 || agreement > 1 {
		t.Fatalf("placed %d, agreement %v", placed, agreement)
	}
	if got := modelServing(m); got != "placement@1" {
		t.Fatalf("serving %q, want placement@1", got)
	}

	// A bad checkpoint behind the alias: refused, placement@1 kept.
	if _, err := reg.Promote(ctx, "placement@3", "champion"); err != nil {
		t.Fatal(err)
	}
	m = waitMetrics(t, addr, time.Minute, "placement@3 refused", func(m map[string]float64) bool {
		return m[`schedrl_extender_model_switches_total{result="refused"}`] == 1
	})
	if got := modelServing(m); got != "placement@1" {
		t.Fatalf("after a bad checkpoint: serving %q, want placement@1 kept", got)
	}

	// Promote the candidate while pods keep coming: the switch drops no request.
	more := make(chan error, 1)
	var second []kubetest.Outcome
	go func() {
		var err error
		second, err = kubetest.Submit(ctx, client, "default", p.Workload[300:400], time.Minute)
		more <- err
	}()
	promoted := time.Now()
	if _, err := reg.Promote(ctx, "placement@2", "champion"); err != nil {
		t.Fatal(err)
	}
	waitMetrics(t, addr, time.Minute, "placement@2 serving", func(m map[string]float64) bool { return modelServing(m) == "placement@2" })
	t.Logf("switched to placement@2 %s after the promotion (poll 200ms)", time.Since(promoted).Round(time.Millisecond))
	if err := <-more; err != nil {
		t.Fatalf("%v\n%s", err, k.SchedulerLog())
	}
	m = scrape(t, addr)
	for k, v := range m {
		if strings.HasPrefix(k, "schedrl_extender_decisions_total{") && strings.Contains(k, `result="error"`) && v > 0 {
			t.Errorf("%s = %v: a request failed across the switch", k, v)
		}
	}
	if m[`schedrl_extender_model_switches_total{result="switched"}`] != 1 {
		t.Errorf("switches: %v", m)
	}
	for _, o := range second {
		if !o.Bound && !strings.Contains(o.Reason, "no node has room") {
			t.Errorf("pod %s not bound across the switch: %s", o.Task, o.Reason)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serve extender: %v", err)
	}

	checkUploadedLog(t, cfg, spool)

	// The shadow log, closed, summarised by eval --shadow.
	if part, _ := filepath.Glob(filepath.Join(shadowDir, "*.part")); len(part) > 0 {
		t.Errorf("open shadow log files left: %v", part)
	}
	jsonOut := filepath.Join(t.TempDir(), "summary.json")
	code, out := inProcess(t, "eval", "--shadow", filepath.Join(shadowDir, "shadow-*.jsonl"), "--shadow-json", jsonOut)
	if code != 0 {
		t.Fatalf("eval --shadow: exit %d\n%s", code, out)
	}
	t.Logf("eval --shadow:\n%s", out)
	var s shadowlog.Summary
	data, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if float64(s.Decisions) != shadowed(m)-m[`schedrl_shadow_decisions_total{result="dropped"}`] {
		t.Errorf("summary has %d decisions, /metrics %v", s.Decisions, shadowed(m))
	}
	if s.AgreementLo > s.Agreement || s.Agreement > s.AgreementHi || !strings.Contains(out, "agreement") {
		t.Errorf("summary %+v", s)
	}
}

// TestEvalShadowBadInput: a malformed shadow log line stops eval --shadow with file:line, and
// a glob matching nothing says so; no summary is written.
func TestEvalShadowBadInput(t *testing.T) {
	dir := t.TempDir()
	good := `{"time":"2026-12-06T01:00:00Z","pod":"default/a","serving":{"model":"placement@1","placed":true,"node":"n1","gpus":[0],"frag_delta":1,"latency_us":900},"shadow":{"model":"placement@2","placed":true,"node":"n1","gpus":[0],"frag_delta":1,"latency_us":800},"agree":true}`
	bad := writeFile(t, filepath.Join(dir, "shadow-1.jsonl"), good+"\n"+`{"time":"2026-12-06T01:00:01Z","pod":`+"\n")
	jsonOut := filepath.Join(dir, "summary.json")
	for _, c := range []struct{ glob, want string }{
		{bad, bad + ":2:"},
		{filepath.Join(dir, "none-*.jsonl"), "no file matches"},
	} {
		code, out := inProcess(t, "eval", "--shadow", c.glob, "--shadow-json", jsonOut)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("eval --shadow %s: exit %d, output %q, want %q", c.glob, code, out, c.want)
		}
		if _, err := os.Stat(jsonOut); err == nil {
			t.Errorf("eval --shadow %s wrote %s", c.glob, jsonOut)
		}
	}
	code, out := inProcess(t, "eval", "--shadow-json", jsonOut)
	if code == 0 || !strings.Contains(out, "--shadow-json") {
		t.Errorf("--shadow-json alone: exit %d, %q", code, out)
	}
}

// checkUploadedLog: with --log-dir s3://shadow/decisions the extender stopped leaves two
// decision logs in the store (the switch began the second), each replays and names the model
// that decided in it, the pipeline's logs stage takes them from the store, and nothing stays in
// the spool; a bucket that does not exist stops the uploader before it serves, named.
func checkUploadedLog(t *testing.T, cfg config.Config, spool string) {
	t.Helper()
	ctx := context.Background()
	store, err := registry.OpenBackend(config.RegistryConfig{Store: "s3://shadow/decisions", S3: cfg.Registry.S3})
	if err != nil {
		t.Fatal(err)
	}
	names, err := store.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 {
		t.Fatalf("store holds %v, want two closed decision logs", names)
	}
	models := map[string]bool{}
	for _, name := range names {
		r, err := store.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := podlog.Replay(bytes.NewReader(data)); err != nil {
			t.Fatalf("uploaded %s: %v", name, err)
		}
		for _, m := range []string{"placement@1", "placement@2"} {
			if bytes.Contains(data, []byte(`"model":"`+m)) {
				models[m] = true
			}
		}
	}
	if !models["placement@1"] || !models["placement@2"] {
		t.Errorf("decision log headers name %v, want placement@1 and placement@2", models)
	}
	checkStoreSource(t, cfg, "s3://shadow/decisions", names)
	if left, _ := os.ReadDir(spool); len(left) > 0 {
		t.Errorf("spool keeps %d files after the upload", len(left))
	}
	d := decisionLogFlags{LogDir: "s3://no-such-bucket/x", LogSpool: t.TempDir()}
	if _, err := newLogUploader(ctx, d, cfg.Registry.S3, slog.Default()); err == nil || !strings.Contains(err.Error(), "--log-dir s3://no-such-bucket/x") {
		t.Errorf("missing bucket: err = %v, want one naming --log-dir", err)
	}
}
