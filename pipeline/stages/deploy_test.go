package stages

import (
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/schedrl/schedrl/internal/config"
)

// TestRetrainDeployments checks that the CI workflow (make pipeline) and the Kubernetes CronJob
// (the image's schedrl pipeline run) run the production config, and that every SCHEDRL_*
// variable the workflow sets is a registry key that takes effect over configs/production.yaml
// (a misspelt variable would otherwise be ignored, and the job would publish to the local
// fallback store).
func TestRetrainDeployments(t *testing.T) {
	var wf struct {
		On   map[string]any `yaml:"on"`
		Jobs map[string]struct {
			Env   map[string]string `yaml:"env"`
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	readYAML(t, "../../.github/workflows/retrain.yml", &wf)
	if _, ok := wf.On["schedule"]; !ok {
		t.Error("retrain.yml has no schedule")
	}
	if _, ok := wf.On["workflow_dispatch"]; !ok {
		t.Error("retrain.yml has no workflow_dispatch")
	}
	job, ok := wf.Jobs["retrain"]
	if !ok {
		t.Fatal("retrain.yml has no job retrain")
	}
	if job.Env["CONFIG"] != "configs/production.yaml" {
		t.Errorf("workflow CONFIG = %q", job.Env["CONFIG"])
	}
	runsPipeline := false
	for _, s := range job.Steps {
		runsPipeline = runsPipeline || strings.Contains(s.Run, "make pipeline CONFIG=")
	}
	if !runsPipeline {
		t.Error("no workflow step runs make pipeline CONFIG=...")
	}

	// A value of the right shape for each registry key the workflow may set.
	values := map[string]string{
		"SCHEDRL_REGISTRY_STORE":          "s3://models/prod",
		"SCHEDRL_REGISTRY_S3_ENDPOINT":    "minio.example:9000",
		"SCHEDRL_REGISTRY_S3_ACCESS_KEY":  "AKIAEXAMPLE",
		"SCHEDRL_REGISTRY_S3_SECRET_KEY":  "s3cr3t",
		"SCHEDRL_REGISTRY_TRACKING_URI":   "https://mlflow.example",
		"SCHEDRL_REGISTRY_TRACKING_TOKEN": "tok",
	}
	for name, v := range job.Env {
		if !strings.HasPrefix(name, config.EnvPrefix+"_") {
			continue
		}
		if _, ok := values[name]; !ok {
			t.Errorf("workflow sets %s, which is not a registry key this test knows", name)
			continue
		}
		if !strings.HasPrefix(v, "${{ secrets.") {
			t.Errorf("workflow sets %s from %q, not from a secret", name, v)
		}
		t.Setenv(name, values[name])
	}
	cfg, err := config.Load("../../configs/production.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Registry
	got := map[string]string{
		"SCHEDRL_REGISTRY_STORE": r.Store, "SCHEDRL_REGISTRY_S3_ENDPOINT": r.S3.Endpoint,
		"SCHEDRL_REGISTRY_S3_ACCESS_KEY": r.S3.AccessKey, "SCHEDRL_REGISTRY_S3_SECRET_KEY": r.S3.SecretKey,
		"SCHEDRL_REGISTRY_TRACKING_URI": r.Tracking.URI, "SCHEDRL_REGISTRY_TRACKING_TOKEN": r.Tracking.Token,
	}
	for name := range job.Env {
		if want, ok := values[name]; ok && got[name] != want {
			t.Errorf("%s did not reach the config: got %q", name, got[name])
		}
	}

	// The CronJob: same command and config, settings from a Secret.
	data, err := os.ReadFile("../../deploy/k8s/retrain-cronjob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	kinds := map[string]map[string]any{}
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			break
		}
		kinds[doc["kind"].(string)] = doc
	}
	cm, ok := kinds["ConfigMap"]["data"].(map[string]any)
	if !ok || cm["RETRAIN_CONFIG"] != "configs/production.yaml" {
		t.Errorf("ConfigMap RETRAIN_CONFIG = %v", cm["RETRAIN_CONFIG"])
	}
	cron, ok := kinds["CronJob"]
	if !ok {
		t.Fatal("no CronJob in retrain-cronjob.yaml")
	}
	if cron["spec"].(map[string]any)["concurrencyPolicy"] != "Forbid" {
		t.Error("CronJob allows concurrent runs")
	}
	for _, want := range []string{`args: ["pipeline", "run", "--config", "$(RETRAIN_CONFIG)"]`, "secretRef:", "persistentVolumeClaim:"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("retrain-cronjob.yaml lacks %q", want)
		}
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
