package registry

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
)

// backends runs a test against both stores: a local folder and the real MinIO.
func backends(t *testing.T, test func(t *testing.T, cfg config.RegistryConfig)) {
	t.Run("file", func(t *testing.T) { test(t, fileConfig(t)) })
	t.Run("s3", func(t *testing.T) { test(t, s3Config(t, false)) })
}

func TestPublishListResolvePullPromote(t *testing.T) {
	backends(t, func(t *testing.T, cfg config.RegistryConfig) {
		ctx := context.Background()
		r := open(t, cfg)
		v1, err := r.Publish(ctx, "defrag-bc", makeCheckpoint(t, 1))
		if err != nil {
			t.Fatal(err)
		}
		v2, err := r.Publish(ctx, "defrag-bc", makeCheckpoint(t, 2))
		if err != nil {
			t.Fatal(err)
		}
		if v1.Number != 1 || v2.Number != 2 || v1.Existing || v2.Existing {
			t.Fatalf("versions %d,%d (existing %v,%v), want 1,2 new", v1.Number, v2.Number, v1.Existing, v2.Existing)
		}
		if _, err := r.Promote(ctx, "defrag-bc@1", "champion"); err != nil {
			t.Fatal(err)
		}
		if models, err := r.Models(ctx); err != nil || !slices.Equal(models, []string{"defrag-bc"}) {
			t.Fatalf("models %v %v", models, err)
		}
		list, err := r.Versions(ctx, "defrag-bc")
		if err != nil || len(list) != 2 {
			t.Fatalf("versions %+v %v", list, err)
		}
		if !slices.Equal(list[0].Aliases, []string{"champion"}) || len(list[1].Aliases) != 0 {
			t.Fatalf("aliases %v / %v", list[0].Aliases, list[1].Aliases)
		}
		for ref, want := range map[string]int{"defrag-bc@2": 2, "defrag-bc@champion": 1, "defrag-bc": 2, "defrag-bc@latest": 2} {
			if v, err := r.Resolve(ctx, ref); err != nil || v.Number != want {
				t.Errorf("resolve %s = %d, %v; want %d", ref, v.Number, err, want)
			}
		}
		// Moving the alias.
		if _, err := r.Promote(ctx, "defrag-bc@2", "champion"); err != nil {
			t.Fatal(err)
		}
		if v, _ := r.Resolve(ctx, "defrag-bc@champion"); v.Number != 2 {
			t.Fatalf("champion = %d after promoting 2", v.Number)
		}

		dest := filepath.Join(t.TempDir(), "pulled")
		if _, err := r.Pull(ctx, "defrag-bc@champion", dest, false); err != nil {
			t.Fatal(err)
		}
		m, err := checkpoint.Read(dest) // verifies every file's sha256 again
		if err != nil {
			t.Fatal(err)
		}
		if m.Digest() != v2.Digest {
			t.Fatal("pulled checkpoint differs from the published one")
		}
		if _, err := r.Pull(ctx, "defrag-bc@1", dest, false); err == nil {
			t.Fatal("pull over an existing folder without force succeeded")
		}

		changes := Diff(list[0], list[1])
		fields := map[string]Change{}
		for _, c := range changes {
			fields[c.Field] = c
		}
		if fields["metrics.frag_reduction"].Delta != "+0.01" || fields["dataset_hash"].B != "ds0002" || fields["hyper.lr"].A == "" {
			t.Fatalf("diff %+v", changes)
		}
		if _, ok := fields["metrics.alloc_ratio"]; ok {
			t.Fatal("diff lists an unchanged metric")
		}
	})
}

func TestSameCheckpointTwiceIsOneVersion(t *testing.T) {
	backends(t, func(t *testing.T, cfg config.RegistryConfig) {
		ctx := context.Background()
		r := open(t, cfg)
		dir := makeCheckpoint(t, 5)
		a, err := r.Publish(ctx, "m", dir)
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.Publish(ctx, "m", dir)
		if err != nil {
			t.Fatal(err)
		}
		if !b.Existing || b.Number != a.Number {
			t.Fatalf("second publish: version %d existing=%v, want %d existing", b.Number, b.Existing, a.Number)
		}
		if list, _ := r.Versions(ctx, "m"); len(list) != 1 {
			t.Fatalf("%d versions, want 1", len(list))
		}
	})
}

func TestConcurrentPublishers(t *testing.T) {
	backends(t, func(t *testing.T, cfg config.RegistryConfig) {
		ctx := context.Background()
		const n = 8
		dirs := make([]string, n)
		for i := range dirs {
			dirs[i] = makeCheckpoint(t, 10+i)
		}
		// Separate Registry values, as separate processes would have.
		got := make([]Version, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { got[i], errs[i] = open(t, cfg).Publish(ctx, "shared", dirs[i]) })
		}
		wg.Wait()
		numbers := map[int]string{}
		for i := range n {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if prev, dup := numbers[got[i].Number]; dup {
				t.Fatalf("version %d given to %s and %s", got[i].Number, prev, dirs[i])
			}
			numbers[got[i].Number] = dirs[i]
		}
		list, err := open(t, cfg).Versions(ctx, "shared")
		if err != nil || len(list) != n {
			t.Fatalf("%d versions listed (%v), want %d", len(list), err, n)
		}
		for i, v := range list {
			if v.Number != i+1 {
				t.Errorf("version numbers %d at %d: not 1..%d", v.Number, i, n)
			}
			want, _ := checkpoint.Read(numbers[v.Number])
			if v.Digest != want.Digest() {
				t.Errorf("version %d holds another publisher's checkpoint", v.Number)
			}
		}
		// Every version's bytes are its own publisher's (nothing overwritten).
		for _, v := range list {
			if _, err := open(t, cfg).Pull(ctx, v.Ref(), filepath.Join(t.TempDir(), "p"), false); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestCorruptedObjectFailsPullNamingFile(t *testing.T) {
	ctx := context.Background()
	t.Run("file", func(t *testing.T) {
		cfg := fileConfig(t)
		r := open(t, cfg)
		if _, err := r.Publish(ctx, "m", makeCheckpoint(t, 1)); err != nil {
			t.Fatal(err)
		}
		obj := filepath.Join(strings.TrimPrefix(cfg.Store, "file://"), "models", "m", "1", "report", "frag.png")
		data, _ := os.ReadFile(obj)
		data[len(data)/2] ^= 0xff
		if err := os.WriteFile(obj, data, 0o644); err != nil {
			t.Fatal(err)
		}
		assertPullNames(t, r, "models/m/1/report/frag.png")
	})
	t.Run("s3", func(t *testing.T) {
		cfg := s3Config(t, false)
		r := open(t, cfg)
		if _, err := r.Publish(ctx, "m", makeCheckpoint(t, 1)); err != nil {
			t.Fatal(err)
		}
		// Overwrite behind the registry's back, as a faulty disk or a bad actor would.
		s3 := r.store.(*s3Backend)
		bad := strings.NewReader("not the model")
		if err := s3.Put(ctx, "models/m/1/model.ot", bad, bad.Size()); err != nil {
			t.Fatal(err)
		}
		assertPullNames(t, r, "models/m/1/model.ot")
	})
}

func assertPullNames(t *testing.T, r *Registry, file string) {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "out")
	_, err := r.Pull(context.Background(), "m@1", dest, false)
	if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "manifest says") {
		t.Fatalf("pull error %v: want it to name %s and the mismatch", err, file)
	}
	if _, statErr := os.Stat(dest); !errors.Is(statErr, os.ErrNotExist) {
		t.Fatal("a failed pull left its destination behind")
	}
}

func TestPublishRefusesInvalidCheckpoints(t *testing.T) {
	ctx := context.Background()
	r := open(t, fileConfig(t))
	empty := t.TempDir()
	if _, err := r.Publish(ctx, "m", empty); err == nil || !strings.Contains(err.Error(), "not a checkpoint") {
		t.Fatalf("empty dir: %v", err)
	}
	tampered := makeCheckpoint(t, 3)
	if err := os.WriteFile(filepath.Join(tampered, checkpoint.ModelFile), []byte("changed after the manifest"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Publish(ctx, "m", tampered); err == nil || !strings.Contains(err.Error(), "model.ot") {
		t.Fatalf("tampered dir: %v", err)
	}
	if models, _ := r.Models(ctx); len(models) != 0 {
		t.Fatalf("refused publishes left models %v", models)
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		kind, name string
		ok         bool
	}{
		{"model", "defrag-bc_v2.1", true},
		{"model", "", false},
		{"model", "a/b", false},
		{"model", "..", false},
		{"model", "a..b", false},
		{"model", ".hidden", false},
		{"model", strings.Repeat("x", 101), false},
		{"model", strings.Repeat("x", 100), true},
		{"alias", "champion", true},
		{"alias", "3", false},
		{"alias", "latest", false},
	}
	for _, tc := range tests {
		if err := ValidateName(tc.kind, tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidateName(%s, %q) = %v, want ok=%v", tc.kind, tc.name, err, tc.ok)
		}
	}
	r := open(t, fileConfig(t))
	if _, err := r.Publish(context.Background(), "../escape", makeCheckpoint(t, 1)); err == nil {
		t.Fatal("published under ../escape")
	}
	if _, err := r.Resolve(context.Background(), "m@../x"); err == nil {
		t.Fatal("resolved m@../x")
	}
}

// Issue 26 case 4: a read-only command on a store that does not exist fails saying so and
// creates nothing; the first publish creates it.
func TestMissingFileStoreIsAnErrorAndStaysAbsent(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "nostore")
	cfg := fileConfig(t)
	cfg.Store = "file://" + dir
	r := open(t, cfg)
	if _, err := r.Models(ctx); !errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), dir+" does not exist") {
		t.Fatalf("models of a missing store: %v", err)
	}
	if _, err := r.Resolve(ctx, "m@1"); !errors.Is(err, ErrNoStore) {
		t.Fatalf("resolve in a missing store: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a read created the store: %v", err)
	}
	if _, err := r.Publish(ctx, "m", makeCheckpoint(t, 4)); err != nil {
		t.Fatal(err)
	}
	if models, err := r.Models(ctx); err != nil || len(models) != 1 {
		t.Fatalf("after publish: %v %v", models, err)
	}
}

// Issue 26 case 13: publishing a directory that does not exist says so.
func TestPublishMissingDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "typo")
	_, err := open(t, fileConfig(t)).Publish(context.Background(), "m", missing)
	if err == nil || !strings.Contains(err.Error(), missing+" does not exist") {
		t.Fatalf("got %v", err)
	}
}

// One corrupt version (or alias) is reported and left out; list, show and the page serve the
// rest of the model and every other model.
func TestCorruptVersionDoesNotHideTheRest(t *testing.T) {
	cfg := fileConfig(t)
	r := open(t, cfg)
	ctx := context.Background()
	for _, seed := range []int{71, 72} {
		if _, err := r.Publish(ctx, "m", makeCheckpoint(t, seed)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Publish(ctx, "other", makeCheckpoint(t, 73)); err != nil {
		t.Fatal(err)
	}
	root := strings.TrimPrefix(cfg.Store, "file://")
	manifest := filepath.Join(root, "models", "m", "1", checkpoint.ManifestFile)
	if err := os.Chmod(manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "models", "m", "aliases", "broken.json"), []byte("]"), 0o644); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	versions, broken, err := r.Scan(ctx, "m")
	if err != nil || len(versions) != 1 || versions[0].Number != 2 || len(broken) != 1 || broken[0].Number != 1 {
		t.Fatalf("scan: versions %v, broken %v, err %v", versions, broken, err)
	}
	if _, err := r.Resolve(ctx, "m@2"); err != nil {
		t.Errorf("show of the good version: %v", err)
	}
	if _, err := r.Resolve(ctx, "m@1"); err == nil || !strings.Contains(err.Error(), "version 1 is unreadable") {
		t.Errorf("show of the corrupt version: %v", err)
	}
	models, err := r.pageModels(ctx)
	if err != nil || len(models) != 2 {
		t.Fatalf("page: %d models, err %v", len(models), err)
	}
}

// A pipeline's model that no pipeline has published yet says which pipeline to run.
func TestUnpublishedPipelineModelSaysWhatToRun(t *testing.T) {
	RegisterPipelineConfig("placement", "configs/default.yaml") // as the placement family's file does
	r := open(t, fileConfig(t))
	if _, err := r.Publish(context.Background(), "m", makeCheckpoint(t, 74)); err != nil {
		t.Fatal(err)
	}
	_, err := r.Resolve(context.Background(), "placement@champion")
	if err == nil || !strings.Contains(err.Error(), "make pipeline CONFIG=configs/default.yaml") {
		t.Errorf("placement@champion before its pipeline ran: %v", err)
	}
}

// Hyper-parameter sections print as YAML key paths, one leaf per row, not as Go map strings.
func TestFlattenHyperGivesKeyPaths(t *testing.T) {
	var hyper map[string]any // as a manifest's JSON decodes
	if err := json.Unmarshal([]byte(`{"pretrain":{"AdamEps":1e-05,"LR":0.001},"seed":7}`), &hyper); err != nil {
		t.Fatal(err)
	}
	got := FlattenHyper(hyper)
	want := map[string]string{"pretrain.AdamEps": "1e-05", "pretrain.LR": "0.001", "seed": "7"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	for k, v := range got {
		if strings.Contains(v, "map[") {
			t.Errorf("%s printed as a Go map: %s", k, v)
		}
	}
}

// Two configs publishing one model is refused when the second registers.
func TestRegisterPipelineConfigRefusesASecondConfig(t *testing.T) {
	RegisterPipelineConfig("test-hint", "configs/a.yaml")
	RegisterPipelineConfig("test-hint", "configs/a.yaml") // the same registration again is harmless
	defer func() {
		if r, _ := recover().(string); !strings.Contains(r, "configs/a.yaml and configs/b.yaml") {
			t.Fatalf("second config for test-hint: recover() = %v", r)
		}
	}()
	RegisterPipelineConfig("test-hint", "configs/b.yaml")
}
