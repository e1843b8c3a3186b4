package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/registry"
	"github.com/schedrl/schedrl/registry/mlflow"
)

// TestPublishGate publishes into a real file:// registry from a real eval of heuristics.
func TestPublishGate(t *testing.T) {
	cfg := testConfig(t)
	store := t.TempDir()
	cfg.Registry.Store = "file://" + store
	stage, out := testPublishGate(t, cfg)
	// Deleting the registry leaves the cached publish stale.
	if err := os.RemoveAll(store); err != nil {
		t.Fatal(err)
	}
	if why, err := stage.Missing(context.Background(), pipeline.Output{Dir: out}); err != nil || !strings.Contains(why, "placement@1") {
		t.Errorf("deleted registry: missing %q (%v), want placement@1 named", why, err)
	}
	// The eval stage then finds no champion instead of failing on the missing store.
	reg, err := registry.Open(cfg.Registry, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ref, err := lookupAlias(reg, "placement", "champion"); err != nil || ref != "" {
		t.Errorf("deleted registry: lookupAlias = %q, %v, want no champion", ref, err)
	}
}

// TestPublishToMinIOAndMLflow is the same against a real MinIO store mirrored to a real MLflow
// server, and checks what MLflow shows: the registered versions, the champion alias and the
// version's run with its eval metrics.
func TestPublishToMinIOAndMLflow(t *testing.T) {
	cfg := testConfig(t)
	minio, err := testserver.StartMinIO()
	if err != nil {
		t.Fatal(err)
	}
	defer minio.Close()
	mlf, err := testserver.StartMLflow(minio, "mlflow-artifacts")
	if err != nil {
		t.Fatal(err)
	}
	defer mlf.Close()
	if err := minio.MakeBucket("models"); err != nil {
		t.Fatal(err)
	}
	cfg.Registry.Store = "s3://models/schedrl"
	cfg.Registry.S3.Endpoint = minio.Endpoint
	cfg.Registry.S3.AccessKey, cfg.Registry.S3.SecretKey = minio.AccessKey, minio.SecretKey
	cfg.Registry.Tracking.URI = mlf.URI
	testPublishGate(t, cfg)

	client := mlflow.New(cfg.Registry.Tracking, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	versions, err := client.SearchModelVersions(ctx, "name='placement'")
	if err != nil || len(versions) != 2 {
		t.Fatalf("MLflow model versions %+v (%v), want 2", versions, err)
	}
	champ, err := client.ByAlias(ctx, "placement", "champion")
	if err != nil {
		t.Fatal(err)
	}
	if champ.TagValue(registry.TagVersion) != "1" {
		t.Errorf("MLflow champion is store version %q, want 1", champ.TagValue(registry.TagVersion))
	}
	run, err := client.GetRun(ctx, champ.RunID)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range run.Data.Metrics {
		found = found || m.Key == "eval_alloc_gpu_pct_130_gpushare40"
	}
	if !found {
		t.Errorf("MLflow run %s metrics %v lack the eval metric", run.Info.RunID, run.Data.Metrics)
	}
}

// testPublishGate runs the publish stage three times over a real eval of heuristics. The
// pipeline-policies.json roles are written by hand, naming heuristics as the candidate and the
// champion, since checkpoints cannot run without libtorch here; the gate compares rows by name.
// It returns the stage and the output directory of a publish of version 1.
func testPublishGate(t *testing.T, cfg config.Config) (pipeline.External, string) {
	cfg.Eval.Policies = []string{"bestfit", "fgd", "packing"}
	cfg.Eval.Traces = []string{"gpushare40"}
	cfg.Eval.Nodes = cfg.Sim.Nodes
	cfg.Eval.Seeds = "49"
	cfg.Eval.PaperOverlay = false
	cfg.Eval.Out = filepath.Join(t.TempDir(), "eval")
	cfg.Pipeline.Gate.Workloads = []string{"gpushare40"}
	cfg.Pipeline.Gate.Baselines = []string{"bestfit"}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := eval.Run(context.Background(), cfg.Eval, eval.Options{Log: quiet}); err != nil {
		t.Fatal(err)
	}
	var regLog bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("registry log:\n%s", regLog.String())
		}
	})
	reg, err := registry.Open(cfg.Registry, slog.New(slog.NewTextHandler(&regLog, nil)))
	if err != nil {
		t.Fatal(err)
	}
	stage, err := newPublish(cfg, reg)
	if err != nil {
		t.Fatal(err)
	}

	// The pretrained checkpoint that fine-tuning started from names the dataset.
	pretrained := t.TempDir()
	if err := os.WriteFile(filepath.Join(pretrained, checkpoint.ModelFile), []byte("pretrained"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Write(pretrained, checkpoint.Manifest{Model: "test-net", Env: "placement", DatasetHash: "ds-of-pretrain"}); err != nil {
		t.Fatal(err)
	}
	publish := func(weights, candidate, champion string) (Published, pipeline.Result) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(cfg.Eval.Out, evalPoliciesFile),
			[]byte(`{"candidate":"`+candidate+`","pretrained":"packing","champion":"`+champion+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		ckpt := t.TempDir()
		if err := os.WriteFile(filepath.Join(ckpt, checkpoint.ModelFile), []byte(weights), 0o644); err != nil {
			t.Fatal(err)
		}
		created := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
		if _, err := checkpoint.Write(ckpt, checkpoint.Manifest{Model: "test-net", Env: "placement", Created: created}); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		res, err := stage.Run(context.Background(), pipeline.Env{
			Inputs:   map[string]pipeline.Output{"finetune": {Dir: ckpt}, "eval": {Dir: cfg.Eval.Out}},
			Upstream: map[string]pipeline.Output{"pretrain": {Dir: pretrained}, "finetune": {Dir: ckpt}, "eval": {Dir: cfg.Eval.Out}},
			OutDir:   out, Log: quiet,
		})
		if err != nil {
			t.Fatal(err)
		}
		var p Published
		data, err := os.ReadFile(filepath.Join(out, "publish.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatal(err)
		}
		return p, res
	}

	// FGD beats BestFit on this workload; with no champion yet it becomes the champion.
	p, res := publish("weights-1", "fgd", "")
	if p.Ref != "placement@1" || !p.Promoted || !strings.Contains(res.Note, "placement@1 is champion") {
		t.Fatalf("first publish: %+v, note %q", p, res.Note)
	}
	// Packing does not beat the champion's row (FGD): published without the alias, reason kept.
	p, res = publish("weights-2", "packing", "fgd")
	if p.Ref != "placement@2" || p.Promoted || !strings.Contains(p.Decision.Reason, "vs fgd") {
		t.Fatalf("second publish: %+v", p)
	}
	if !strings.Contains(res.Note, "published without champion") {
		t.Errorf("note %q", res.Note)
	}
	champ, err := reg.Resolve(context.Background(), "placement@champion")
	if err != nil || champ.Number != 1 {
		t.Fatalf("champion is %v (%v), want version 1", champ.Ref(), err)
	}
	// The version records its lineage (issue 34): the pretrained checkpoint's dataset, the
	// pipeline config's hash, and the code revision ("unknown": go test does not link one).
	if m := champ.Manifest; m.DatasetHash != "ds-of-pretrain" || len(m.ConfigHash) != 64 || m.CodeRevision != "unknown" {
		t.Errorf("version lineage: dataset %q, config %q, code %q; want ds-of-pretrain, a sha256, unknown", m.DatasetHash, m.ConfigHash, m.CodeRevision)
	}
	// The version carries the report and the candidate's eval metrics.
	if _, ok := champ.Manifest.Metrics["eval_alloc_gpu_pct_130_gpushare40"]; !ok {
		t.Errorf("version metrics %v lack the eval metric", champ.Manifest.Metrics)
	}
	// Publishing the first checkpoint again returns version 1, still champion.
	p, _ = publish("weights-1", "fgd", "")
	if p.Ref != "placement@1" || !p.Existing || !p.Promoted {
		t.Errorf("republish: %+v", p)
	}
	versions, err := reg.Versions(context.Background(), "placement")
	if err != nil || len(versions) != 2 {
		t.Errorf("versions %d (%v), want 2", len(versions), err)
	}
	// A cached publish counts while its version is in the registry, and not once it is gone.
	out := t.TempDir()
	data, _ := json.Marshal(p)
	if err := os.WriteFile(filepath.Join(out, "publish.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if why, err := stage.(pipeline.External).Missing(context.Background(), pipeline.Output{Dir: out}); err != nil || why != "" {
		t.Errorf("published version: missing %q (%v), want nothing", why, err)
	}
	stale := p
	stale.Digest = strings.Repeat("0", 64)
	data, _ = json.Marshal(stale)
	if err := os.WriteFile(filepath.Join(out, "publish.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if why, err := stage.(pipeline.External).Missing(context.Background(), pipeline.Output{Dir: out}); err != nil || !strings.Contains(why, "placement@1") {
		t.Errorf("version with another digest: missing %q (%v), want it named", why, err)
	}
	data, _ = json.Marshal(p)
	if err := os.WriteFile(filepath.Join(out, "publish.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	ref, err := lookupAlias(reg, "placement", "champion")
	if err != nil || ref != "placement@1" {
		t.Errorf("lookupAlias = %q, %v", ref, err)
	}
	return stage.(pipeline.External), out
}
