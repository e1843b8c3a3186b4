package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
