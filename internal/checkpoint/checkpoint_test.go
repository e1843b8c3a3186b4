package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func fixture(t *testing.T) (string, Manifest) {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, ModelFile), []byte("varstore bytes"), 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, "report"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "report", "curve.png"), []byte("png"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, ".model.ot.tmp-123"), []byte("junk"), 0o644))
	m, err := Write(dir, Manifest{
		Model: "attention-policy", Hyper: map[string]any{"hidden": 64, "lr": 3e-4, "act": "relu"},
		Env: "defrag", FeatureVersion: 2, DatasetHash: "d1", ConfigHash: "c1", CodeRevision: "abc",
		Metrics: map[string]float64{"frag_reduction": 0.25},
		History: map[string][]Step{"loss": {{Step: 1, Value: 0.9}, {Step: 2, Value: 0.5}}},
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	})
	must(t, err)
	return dir, m
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	dir, written := fixture(t)
	if got := len(written.Files); got != 2 {
		t.Fatalf("files %+v: want model.ot and report/curve.png only", written.Files)
	}
	if written.Files[0].Path != ModelFile || written.Files[1].Path != "report/curve.png" {
		t.Fatalf("files not in path order: %+v", written.Files)
	}
	read, err := Read(dir)
	must(t, err)
	if read.Digest() != written.Digest() {
		t.Fatalf("digest changed across write/read:\n%+v\n%+v", written, read)
	}
	if read.Hyper["hidden"] != 64.0 || read.History["loss"][1].Value != 0.5 {
		t.Fatalf("fields lost: %+v", read)
	}
}

func TestDigestDependsOnContent(t *testing.T) {
	_, m := fixture(t)
	other := m
	other.Metrics = map[string]float64{"frag_reduction": 0.26}
	if m.Digest() == other.Digest() {
		t.Fatal("different metrics, same digest")
	}
}

func TestReadDetectsTampering(t *testing.T) {
	tests := []struct {
		name   string
		change func(dir string) error
		want   string
	}{
		{"changed bytes", func(d string) error {
			return os.WriteFile(filepath.Join(d, ModelFile), []byte("varstore bytez"), 0o644)
		}, "model.ot: sha256"},
		{"truncated", func(d string) error {
			return os.WriteFile(filepath.Join(d, "report", "curve.png"), []byte("pn"), 0o644)
		}, "curve.png: size 2"},
		{"missing", func(d string) error { return os.Remove(filepath.Join(d, ModelFile)) }, "model.ot: open"},
		{"no manifest", func(d string) error { return os.Remove(filepath.Join(d, ManifestFile)) }, "not a checkpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := fixture(t)
			must(t, tc.change(dir))
			_, err := Read(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestParseRejectsBadManifests(t *testing.T) {
	dir, m := fixture(t)
	good, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	must(t, err)
	edit := func(f func(*Manifest)) string {
		c := m
		c.Files = append([]File(nil), m.Files...)
		f(&c)
		b, err := c.Encode()
		must(t, err)
		return string(b)
	}
	tests := []struct {
		name, data, want string
	}{
		{"syntax", strings.Replace(string(good), `"env"`, `"env" "x"`, 1), "line "},
		{"unknown field", strings.Replace(string(good), `"env"`, `"envv": 1, "env"`, 1), `unknown field "envv"`},
		{"wrong type", strings.Replace(string(good), `"feature_version": 2`, `"feature_version": "2"`, 1), "field feature_version"},
		{"format", edit(func(c *Manifest) { c.Format = 9 }), "field format"},
		{"no model", edit(func(c *Manifest) { c.Model = "" }), "field model"},
		{"escape", edit(func(c *Manifest) { c.Files[1].Path = "../x" }), "files[1].path"},
		{"absolute", edit(func(c *Manifest) { c.Files[1].Path = "/etc/passwd" }), "files[1].path"},
		{"duplicate", edit(func(c *Manifest) { c.Files[1].Path = ModelFile }), "listed twice"},
		{"bad digest", edit(func(c *Manifest) { c.Files[0].SHA256 = "xyz" }), "files[0].sha256"},
		{"no model.ot", edit(func(c *Manifest) { c.Files = c.Files[1:] }), "no model.ot"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestWriteRefusesDirWithoutModel(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644))
	if _, err := Write(dir, Manifest{Model: "m", Env: "e"}); err == nil || !strings.Contains(err.Error(), "no model.ot") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		t.Fatal("manifest written for an invalid checkpoint")
	}
}

// A checkpoint's identity is its content: the same weights and run record written at another
// time (another created, other epoch seconds, another wall time in its report) have the
// same Digest; other weights or another result do not.
func TestDigestLeavesOutWallClock(t *testing.T) {
	save := func(weights, loss, seconds, created string) Manifest {
		t.Helper()
		dir := t.TempDir()
		must(t, os.WriteFile(filepath.Join(dir, ModelFile), []byte(weights), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "run.json"),
			[]byte(`{"epochs":[{"epoch":1,"loss":`+loss+`,"seconds":`+seconds+`}]}`), 0o644))
		must(t, os.MkdirAll(filepath.Join(dir, "report"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "report", "report.md"), []byte("Wall time "+seconds+" s"), 0o644))
		at, err := time.Parse(time.RFC3339, created)
		must(t, err)
		m, err := Write(dir, Manifest{Model: "attention-policy", Env: "placement", Created: at})
		must(t, err)
		read, err := Read(dir)
		must(t, err)
		if read.Digest() != m.Digest() {
			t.Fatalf("digest changed across write/read")
		}
		return m
	}
	a := save("weights", "0.5", "2.964721806", "2026-12-03T20:11:35Z")
	b := save("weights", "0.5", "15.8", "2026-12-04T08:00:00Z")
	if a.Digest() != b.Digest() {
		t.Errorf("same weights and results saved at another time: digest %s vs %s", a.Digest(), b.Digest())
	}
	if a.Files[1].SHA256 == b.Files[1].SHA256 || a.Created == b.Created {
		t.Fatalf("the fixture should differ in bytes: %+v vs %+v", a, b)
	}
	if c := save("weightz", "0.5", "2.964721806", "2026-12-03T20:11:35Z"); c.Digest() == a.Digest() {
		t.Error("other weights, same digest")
	}
	if c := save("weights", "0.6", "2.964721806", "2026-12-03T20:11:35Z"); c.Digest() == a.Digest() {
		t.Error("another loss in run.json, same digest")
	}
}
