package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/testserver"
)

// Issue 26 case 15: what MLflow shows is true, read back by MLflow's own Python client from the
// real server: the version's source downloads the checkpoint's files (a file:// store's are
// uploaded through the server's artifact proxy; an s3:// store is the source itself), and
// nested hyper-parameters are flat params.
func TestMLflowClientReadsTheVersionBack(t *testing.T) {
	deps, err := testserver.DepsDir()
	if err != nil {
		t.Fatal(err)
	}
	python := filepath.Join(deps, "venv-mlflow", "bin", "python")
	for _, store := range []string{"file", "s3"} {
		t.Run(store, func(t *testing.T) {
			cfg := s3Config(t, true)
			if store == "file" {
				cfg.Store = "file://" + t.TempDir()
			}
			ckpt := t.TempDir()
			if err := os.WriteFile(filepath.Join(ckpt, checkpoint.ModelFile), []byte("weights of "+store), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := checkpoint.Write(ckpt, checkpoint.Manifest{
				Model: "attention-policy", Env: "placement", FeatureVersion: 1, Created: time.Now().UTC(),
				Hyper: map[string]any{"arch": map[string]any{"encoder_layers": 2, "candidates": "feasible"}, "lr": 0.0003},
			}); err != nil {
				t.Fatal(err)
			}
			model := "truth-" + store
			if _, err := open(t, cfg).Publish(context.Background(), model, ckpt); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(python, "testdata/mlflow_readback.py", mlflowSrv.URI, model, "1", t.TempDir())
			cmd.Env = append(os.Environ(), "MLFLOW_TRACKING_TOKEN="+testToken,
				"MLFLOW_S3_ENDPOINT_URL=http://"+minioSrv.Endpoint,
				"AWS_ACCESS_KEY_ID="+minioSrv.AccessKey, "AWS_SECRET_ACCESS_KEY="+minioSrv.SecretKey)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("mlflow client: %v\n%s", err, stderr.String())
			}
			var got struct {
				Source string            `json:"source"`
				Params map[string]string `json:"params"`
				Files  []string          `json:"files"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			// The store's own bookkeeping (.claim) may come along; the checkpoint must.
			got.Files = slices.DeleteFunc(got.Files, func(f string) bool { return strings.HasPrefix(f, ".") })
			if want := []string{checkpoint.ManifestFile, checkpoint.ModelFile}; !slices.Equal(got.Files, want) {
				t.Errorf("download of source %s gives %v, want %v", got.Source, got.Files, want)
			}
			if store == "s3" && !strings.HasPrefix(got.Source, "s3://") {
				t.Errorf("source %s: want the store's s3:// URI", got.Source)
			}
			for k, v := range map[string]string{"hyper.arch.encoder_layers": "2", "hyper.arch.candidates": "feasible", "hyper.lr": "0.0003"} {
				if got.Params[k] != v {
					t.Errorf("param %s = %q, want %q (params %v)", k, got.Params[k], v, got.Params)
				}
			}
			if _, ok := got.Params["hyper.arch"]; ok {
				t.Errorf("hyper.arch logged as one value: %q", got.Params["hyper.arch"])
			}
		})
	}
}
