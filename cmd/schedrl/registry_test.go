package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/schedrl/schedrl/internal/checkpoint"
)

// registryCLI runs `schedrl registry ARGS...` as a real process; it returns the combined
// output and whether it exited 0.
func registryCLI(t *testing.T, env []string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"registry"}, args...)...)
	cmd.Env = append(append(os.Environ(), "SCHEDRL_TEST_AS_CLI=1"), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err == nil
}

func registryFixture(t *testing.T, seed int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, checkpoint.ModelFile), bytes.Repeat([]byte{byte(seed)}, 512), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := checkpoint.Write(dir, checkpoint.Manifest{
		Model: "attention-policy", Env: "defrag", FeatureVersion: 1, DatasetHash: "ds" + string(rune('0'+seed)),
		Metrics: map[string]float64{"frag_reduction": float64(seed) / 10}, Created: time.Unix(1_800_000_000, 0).UTC(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRegistryCommands(t *testing.T) {
	store := "--store=file://" + t.TempDir()
	steps := []struct {
		args []string
		ok   bool
		want string
	}{
		{[]string{"publish", registryFixture(t, 1), "--model", "cli", store}, true, "published cli@1"},
		{[]string{"publish", registryFixture(t, 2), "--model", "cli", store}, true, "published cli@2"},
		{[]string{"publish", t.TempDir(), "--model", "cli", store}, false, "not a checkpoint"},
		{[]string{"publish", registryFixture(t, 3), "--model", "../up", store}, false, `model name "../up"`},
		{[]string{"promote", "cli@1", "--alias", "champion", store}, true, "cli@champion -> cli@1"},
		{[]string{"list", store}, true, "cli@1"},
		{[]string{"show", "cli@champion", store}, true, "dataset                 ds1"},
		{[]string{"diff", "cli@1", "cli@2", store}, true, "metrics.frag_reduction"},
		{[]string{"show", "cli@7", store}, false, "no version 7"},
		{[]string{"pull", "cli@2", "--to", filepath.Join(t.TempDir(), "p"), store}, true, "1 files verified"},
		{[]string{"sync", store}, false, "no MLflow tracking server configured"},
		// Credentials are never flags.
		{[]string{"list", "--set", "registry.s3.secret_key=x", store}, true, "VERSION"},
		{[]string{"list", "--secret-key", "x", store}, false, "unknown flag"},
	}
	for _, s := range steps {
		out, ok := registryCLI(t, nil, s.args...)
		if ok != s.ok || !strings.Contains(out, s.want) {
			t.Errorf("registry %v: ok=%v, want %v and output with %q:\n%s", s.args[:2], ok, s.ok, s.want, out)
		}
	}
	out, _ := registryCLI(t, nil, "list", store)
	if !strings.Contains(out, "champion") || strings.Count(out, "cli@") != 2 {
		t.Errorf("list:\n%s", out)
	}
}

func TestConfigShowRedactsRegistrySecrets(t *testing.T) {
	env := []string{"SCHEDRL_REGISTRY_S3_ACCESS_KEY=AKIDsecret123", "SCHEDRL_REGISTRY_S3_SECRET_KEY=sk-very-secret",
		"SCHEDRL_REGISTRY_TRACKING_TOKEN=tok-secret", "SCHEDRL_REGISTRY_TRACKING_PASSWORD=pw-secret"}
	cmd := exec.Command(os.Args[0], "config", "show")
	cmd.Env = append(append(os.Environ(), "SCHEDRL_TEST_AS_CLI=1"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("config show: %v\n%s", err, out)
	}
	for _, secret := range []string{"AKIDsecret123", "sk-very-secret", "tok-secret", "pw-secret"} {
		if bytes.Contains(out, []byte(secret)) {
			t.Errorf("config show prints %s:\n%s", secret, out)
		}
	}
	if !bytes.Contains(out, []byte("secret_key: '***'")) && !bytes.Contains(out, []byte(`secret_key: "***"`)) {
		t.Errorf("secret_key not shown redacted:\n%s", out)
	}
}

// pipelineLikeFixture is a checkpoint with what a pipeline version records: sha256 hashes, a
// dirty code revision, a parent digest and nested hyper-parameters with long lists.
func pipelineLikeFixture(t *testing.T, seed int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, checkpoint.ModelFile), bytes.Repeat([]byte{byte(seed)}, 512), 0o644); err != nil {
		t.Fatal(err)
	}
	hex := func(c byte) string { return strings.Repeat(string(rune('a'+seed))+string(c), 32) }
	var workloads []string
	for i := range 12 {
		workloads = append(workloads, fmt.Sprintf("openb-gpushare%d-seed%d", 20*i, seed))
	}
	_, err := checkpoint.Write(dir, checkpoint.Manifest{
		Model: "attention-policy", Env: "placement", FeatureVersion: 2,
		DatasetHash: hex('1'), ConfigHash: hex('2'), CodeRevision: hex('3')[:40] + "-dirty", Parent: hex('4'),
		Hyper: map[string]any{"finetune": map[string]any{"workloads": workloads, "lr": 0.0003 * float64(seed),
			"candidates": strings.Repeat("frag-aware,", 6+seed)}, "seed": seed},
		Metrics: map[string]float64{"eval_alloc_gpu_pct_130_openb-gpushare100-multi-gpu-heavy-tail": 91.234567 + float64(seed)},
		Created: time.Unix(1_800_000_000, 0).UTC(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// `registry diff` of two pipeline versions fits in 160 columns per row (issue 34).
func TestRegistryDiffFits160Columns(t *testing.T) {
	store := "--store=file://" + t.TempDir()
	for _, seed := range []int{1, 2} {
		if out, ok := registryCLI(t, nil, "publish", pipelineLikeFixture(t, seed), "--model", "placement", store); !ok {
			t.Fatalf("publish: %s", out)
		}
	}
	out, ok := registryCLI(t, nil, "diff", "placement@1", "placement@2", store)
	if !ok || !strings.Contains(out, "hyper.finetune.workloads") || !strings.Contains(out, "code_revision") {
		t.Fatalf("diff:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > 160 {
			t.Errorf("diff row of %d columns:\n%s", n, line)
		}
	}
}

// gc lists, then removes, what a killed publish left; list shows the lineage columns; serve
// on a missing store fails at start (issue 34).
func TestRegistryGCListServe(t *testing.T) {
	root := t.TempDir()
	store := "--store=file://" + root
	if out, ok := registryCLI(t, nil, "publish", pipelineLikeFixture(t, 1), "--model", "placement", store); !ok {
		t.Fatalf("publish: %s", out)
	}
	// A publish of version 2 killed two hours ago: its claim and one uploaded file.
	dead := filepath.Join(root, "models", "placement", "2")
	if err := os.MkdirAll(dead, 0o755); err != nil {
		t.Fatal(err)
	}
	claim := fmt.Sprintf(`{"digest":"d","host":"h","pid":4242,"time":%q}`, time.Now().Add(-2*time.Hour).UTC().Format(time.RFC3339))
	if err := os.WriteFile(filepath.Join(dead, ".claim"), []byte(claim), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, checkpoint.ModelFile), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, ok := registryCLI(t, nil, "gc", "--dry-run", store)
	if !ok || !strings.Contains(out, "would remove placement@2") || !strings.Contains(out, "pid 4242") {
		t.Fatalf("gc --dry-run:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dead, checkpoint.ModelFile)); err != nil {
		t.Fatalf("gc --dry-run removed a file: %v", err)
	}
	if out, ok := registryCLI(t, nil, "gc", store); !ok || !strings.Contains(out, "removed placement@2") {
		t.Fatalf("gc:\n%s", out)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("gc left %s: %v", dead, err)
	}
	out, ok = registryCLI(t, nil, "list", store)
	if !ok || !strings.Contains(out, "CONFIG") || !strings.Contains(out, "-dirty") || strings.Count(out, "placement@") != 1 {
		t.Errorf("list:\n%s", out)
	}
	out, ok = registryCLI(t, nil, "serve", "--addr", "127.0.0.1:0", "--store=file://"+filepath.Join(root, "typo"))
	if ok || !strings.Contains(out, "schedrl:") || !strings.Contains(out, "typo") {
		t.Errorf("serve on a missing store: ok=%v\n%s", ok, out)
	}
}
