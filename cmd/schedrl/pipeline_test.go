package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/pipeline/stages"
	"github.com/schedrl/schedrl/registry"
	"github.com/schedrl/schedrl/registry/mlflow"
)

// The test binary doubles as the schedrl command, so pipeline runs are real processes that a
// test can kill.
func TestMain(m *testing.M) {
	if os.Getenv("SCHEDRL_TEST_AS_CLI") == "1" {
		main()
		os.Exit(0)
	}
	code := m.Run()
	closeSharedNode()
	os.Exit(code)
}

// repoRoot is where configs/ and the relative trace paths in them resolve.
const repoRoot = "../.."

// cli starts `schedrl pipeline run --config configs/smoke.yaml --set pipeline.dir=DIR` with
// the registry settings in env.
func cli(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	return cliConfig(t, "configs/smoke.yaml", dir, env, args...)
}

// cliConfig is cli with another config file.
func cliConfig(t *testing.T, config, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"pipeline", "run", "--config", config,
		"--set", "pipeline.dir=" + dir}, args...)...)
	cmd.Dir = repoRoot
	cmd.Env = append(append(os.Environ(), "SCHEDRL_TEST_AS_CLI=1"), env...)
	return cmd
}

func runCLI(t *testing.T, dir string, env []string) *pipeline.Record {
	t.Helper()
	return runCLIConfig(t, "configs/smoke.yaml", dir, env)
}

// runFamilyPipeline runs config's pipeline once with a file registry in a temporary folder and
// fails unless every stage is done; it returns the run's record, its pipeline folder, the
// registry's store and the environment naming it, for the family tests' second run and their
// commands on the registry.
func runFamilyPipeline(t *testing.T, config string) (first *pipeline.Record, dir, store string, env []string) {
	t.Helper()
	root := t.TempDir()
	dir, store = filepath.Join(root, "pipeline"), "file://"+filepath.Join(root, "registry")
	env = []string{"SCHEDRL_REGISTRY_STORE=" + store, "SCHEDRL_REGISTRY_TRACKING_URI="}
	first = runCLIConfig(t, config, dir, env)
	for _, s := range first.Stages {
		if s.Status != pipeline.StatusDone {
			t.Fatalf("first run: stage %s %s, want done", s.Name, s.Status)
		}
	}
	return first, dir, store, env
}

func runCLIConfig(t *testing.T, config, dir string, env []string) *pipeline.Record {
	t.Helper()
	var out bytes.Buffer
	cmd := cliConfig(t, config, dir, env)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("pipeline run: %v\n%s", err, out.String())
	}
	rec, err := pipeline.LoadRecord(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func stageOf(t *testing.T, rec *pipeline.Record, name string) pipeline.StageRecord {
	t.Helper()
	for _, s := range rec.Stages {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no stage %s in run %s", name, rec.RunID)
	return pipeline.StageRecord{}
}

func readPublished(t *testing.T, rec *pipeline.Record) stages.Published {
	t.Helper()
	var p stages.Published
	data, err := os.ReadFile(filepath.Join(stageOf(t, rec, "publish").Output.Dir, "publish.json"))
	if err == nil {
		err = json.Unmarshal(data, &p)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// registryEnv points the registry section at a fresh bucket of minio, mirrored to mlf.
func registryEnv(t *testing.T, minio *testserver.MinIO, mlf *testserver.MLflow, bucket string) []string {
	t.Helper()
	if err := minio.MakeBucket(bucket); err != nil {
		t.Fatal(err)
	}
	return []string{
		"SCHEDRL_REGISTRY_STORE=s3://" + bucket + "/smoke",
		"SCHEDRL_REGISTRY_S3_ENDPOINT=" + minio.Endpoint,
		"SCHEDRL_REGISTRY_S3_ACCESS_KEY=" + minio.AccessKey,
		"SCHEDRL_REGISTRY_S3_SECRET_KEY=" + minio.SecretKey,
		"SCHEDRL_REGISTRY_TRACKING_URI=" + mlf.URI,
		"SCHEDRL_REGISTRY_TRACKING_EXPERIMENT=" + bucket,
	}
}

func smokeConfig(t *testing.T, env []string) config.Config {
	t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cfg, err := config.Load(filepath.Join(repoRoot, "configs/smoke.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestSmokePipeline runs every stage of configs/smoke.yaml against real MinIO and MLflow, checks
// the published version, its alias decision and its MLflow run, reruns it (everything cached),
// and kills a second run during finetune: its rerun resumes and publishes the same weights and
// the same held-out allocation as the uninterrupted run.
func TestSmokePipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole smoke pipeline (minutes)")
	}
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

	env := registryEnv(t, minio, mlf, "smoke-a")
	dir := t.TempDir()
	rec := runCLI(t, dir, env)
	if rec.Status != pipeline.RunOK {
		t.Fatalf("run %s: %s", rec.RunID, rec.Status)
	}
	for _, s := range rec.Stages {
		if s.Status != pipeline.StatusDone {
			t.Errorf("stage %s: %s", s.Name, s.Status)
		}
	}
	pub := readPublished(t, rec)
	cfg := smokeConfig(t, env)
	checkPublished(t, cfg, pub)

	// Nothing changed: every stage is skipped.
	again := runCLI(t, dir, env)
	for _, s := range again.Stages {
		if s.Status != pipeline.StatusCached {
			t.Errorf("rerun: stage %s: %s", s.Name, s.Status)
		}
	}

	// A second run, killed during finetune once it has written a checkpoint, then resumed.
	env2 := registryEnv(t, minio, mlf, "smoke-b")
	dir2 := t.TempDir()
	killDuringFinetune(t, dir2, env2)
	resumed := runCLI(t, dir2, env2)
	ft := stageOf(t, resumed, "finetune")
	if !ft.Resumed {
		t.Errorf("finetune after the kill: status %s, resumed %v", ft.Status, ft.Resumed)
	}
	for _, name := range []string{"logs", "datasets", "pretrain"} {
		if s := stageOf(t, resumed, name); s.Status != pipeline.StatusCached {
			t.Errorf("after the kill: stage %s: %s, want cached", name, s.Status)
		}
	}
	a, b := finalWeights(t, rec), finalWeights(t, resumed)
	if a != b {
		t.Errorf("fine-tuned weights after kill+resume %s, uninterrupted %s", b, a)
	}
	if ma, mb := stageOf(t, rec, "eval").Metric, stageOf(t, resumed, "eval").Metric; ma == nil || mb == nil || *ma != *mb {
		t.Errorf("held-out metric after kill+resume %+v, uninterrupted %+v", mb, ma)
	}
	if pa, pb := readPublished(t, rec), readPublished(t, resumed); pa.Promoted != pb.Promoted {
		t.Errorf("gate decided %v after kill+resume, %v uninterrupted", pb.Promoted, pa.Promoted)
	}
}

// checkPublished checks the version in the store and in MLflow, and that the alias was moved
// exactly when the gate said so.
func checkPublished(t *testing.T, cfg config.Config, pub stages.Published) {
	t.Helper()
	ctx := context.Background()
	model := cfg.Pipeline.Model
	if pub.Ref != model+"@1" {
		t.Errorf("published %s, want %s@1", pub.Ref, model)
	}
	if pub.Decision.Reason == "" || len(pub.Decision.Comparisons) == 0 {
		t.Errorf("gate decision without a reason or comparisons: %+v", pub.Decision)
	}
	reg, err := registry.Open(cfg.Registry, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	v, err := reg.Resolve(ctx, pub.Ref)
	if err != nil {
		t.Fatal(err)
	}
	hasAlias := strings.Contains(strings.Join(v.Aliases, ","), cfg.Pipeline.Gate.Alias)
	if hasAlias != pub.Promoted || pub.Promoted != pub.Decision.Promote {
		t.Errorf("version aliases %v, promoted %v, gate said %v", v.Aliases, pub.Promoted, pub.Decision.Promote)
	}
	client := mlflow.New(cfg.Registry.Tracking, slog.New(slog.NewTextHandler(io.Discard, nil)))
	mvs, err := client.SearchModelVersions(ctx, "name='"+model+"'")
	if err != nil || len(mvs) != 1 {
		t.Fatalf("MLflow versions of %s: %+v (%v)", model, mvs, err)
	}
	mv := mvs[0]
	if mv.TagValue(registry.TagVersion) != "1" || strings.Contains(strings.Join(mv.Aliases, ","), cfg.Pipeline.Gate.Alias) != pub.Promoted {
		t.Errorf("MLflow version %+v, promoted %v", mv, pub.Promoted)
	}
	run, err := client.GetRun(ctx, mv.RunID)
	if err != nil {
		t.Fatal(err)
	}
	metric := "eval_" + cfg.Pipeline.Gate.Metric + "_" + cfg.Pipeline.Gate.Workloads[0]
	found := false
	for _, m := range run.Data.Metrics {
		found = found || m.Key == metric
	}
	if !found {
		t.Errorf("MLflow run %s lacks %s: %v", mv.RunID, metric, run.Data.Metrics)
	}
}

// killDuringFinetune starts a run and SIGKILLs it once finetune has saved a checkpoint.
func killDuringFinetune(t *testing.T, dir string, env []string) {
	t.Helper()
	var out bytes.Buffer
	cmd := cli(t, dir, env)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		parts, _ := filepath.Glob(filepath.Join(dir, "stages", "finetune", "*.partial", "out", "checkpoints", "[0-9]*", checkpoint.ManifestFile))
		if len(parts) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("finetune never checkpointed:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	rec, err := pipeline.LoadRecord(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if s := stageOf(t, rec, "finetune"); s.Status != pipeline.StatusRunning {
		t.Fatalf("killed run's record shows finetune %s, want running:\n%s", s.Status, out.String())
	}
}

// finalWeights digests the fine-tuned network's parameters by value, in the network's own
// order: the VarStore file's bytes are not stable across saves of equal weights.
func finalWeights(t *testing.T, rec *pipeline.Record) string {
	t.Helper()
	net, _, err := nn.LoadCheckpoint(stageOf(t, rec, "finetune").Output.Dir, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, p := range net.Params() {
		fmt.Fprintf(h, "%s %v\n", p.Name, p.Tensor.Float64Values())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cleanRun is what a clean rerun must reproduce: each stage's key and output content hash,
// each model.ot's sha256 (by path under the pipeline directory) and the published digest.
type cleanRun struct {
	keys, hashes, weights map[string]string
	digest                string
	created               []byte // the pretrained checkpoint's manifest, which carries its creation time
}

// TestCleanRerunSameKeys runs the smoke pipeline, deletes its stage cache and registry, and
// runs it again at the same paths: every stage key, output hash, checkpoint sha256 and the
// published version's digest are the same, although wall times, throughputs and each
// manifest's created differ between the two runs.
func TestCleanRerunSameKeys(t *testing.T) {
	root := t.TempDir()
	dir, store := filepath.Join(root, "pipeline"), filepath.Join(root, "registry")
	env := []string{"SCHEDRL_REGISTRY_STORE=file://" + store, "SCHEDRL_REGISTRY_TRACKING_URI="}
	once := func() cleanRun {
		t.Helper()
		rec := runCLI(t, dir, env)
		r := cleanRun{keys: map[string]string{}, hashes: map[string]string{}, weights: map[string]string{}}
		for _, s := range rec.Stages {
			if s.Status != pipeline.StatusDone || s.Output == nil {
				t.Fatalf("stage %s: %s, want done", s.Name, s.Status)
			}
			r.keys[s.Name], r.hashes[s.Name] = s.Key, s.Output.Hash
		}
		r.digest = readPublished(t, rec).Digest
		var err error
		if r.created, err = os.ReadFile(filepath.Join(stageOf(t, rec, "pretrain").Output.Dir, checkpoint.ManifestFile)); err != nil {
			t.Fatal(err)
		}
		err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.Name() != checkpoint.ModelFile {
				return err
			}
			data, err := os.ReadFile(path)
			sum := sha256.Sum256(data)
			r.weights[strings.TrimPrefix(path, dir)] = hex.EncodeToString(sum[:])
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.weights) < 2 {
			t.Fatalf("checkpoints %v: want pretrain's and finetune's model.ot at least", r.weights)
		}
		for _, p := range []string{dir, store} {
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	a := once()
	time.Sleep(5 * time.Millisecond) // created has millisecond resolution
	b := once()
	for _, m := range []struct {
		name string
		a, b map[string]string
	}{{"stage key", a.keys, b.keys}, {"output hash", a.hashes, b.hashes}, {"model.ot sha256", a.weights, b.weights}} {
		if !maps.Equal(m.a, m.b) {
			t.Errorf("%s differs between clean runs:\n%v\n%v", m.name, m.a, m.b)
		}
	}
	if a.digest != b.digest {
		t.Errorf("published digest %s, then %s", a.digest, b.digest)
	}
	if bytes.Equal(a.created, b.created) {
		t.Error("the pretrained manifests are byte-identical: the runs should differ in created")
	}
}
