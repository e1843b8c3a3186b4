package registry

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
)

// A publish killed with SIGKILL mid-upload (issue 34 item 5) leaves a claim, objects and, in
// a file:// store, a hidden temporary. GC removes them once stale (listing them first with
// dryRun), or the next publish does, and the number is taken again.

const childEnv = "SCHEDRL_REGISTRY_TEST_CHILD"

// childPublish is the killed publisher: it publishes CKPT to the store of the config in the
// environment and stops for ever inside the upload of the checkpoint's last file, after its
// first bytes, saying "stalled" on stdout.
func childPublish() {
	cfg := config.Default().Registry
	cfg.Store = os.Getenv(childEnv + "_STORE")
	cfg.S3.Endpoint = os.Getenv(childEnv + "_ENDPOINT")
	cfg.S3.AccessKey, cfg.S3.SecretKey = os.Getenv(childEnv+"_AK"), os.Getenv(childEnv+"_SK")
	dir := os.Getenv(childEnv + "_CKPT")
	r, err := Open(cfg, nil)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	m, err := checkpoint.Read(dir)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	last := m.Files[len(m.Files)-1].Path
	r.uploadReader = func(key string, src io.Reader) io.Reader {
		if !strings.HasSuffix(key, "/"+last) {
			return src
		}
		return &stallingReader{r: src}
	}
	_, err = r.Publish(context.Background(), "killed", dir)
	fmt.Println("publish returned:", err)
	os.Exit(2)
}

// stallingReader passes its first read through, then blocks for ever.
type stallingReader struct {
	r    io.Reader
	read bool
}

func (s *stallingReader) Read(b []byte) (int, error) {
	if !s.read {
		s.read = true
		return s.r.Read(b[:min(len(b), 1000)])
	}
	fmt.Println("stalled")
	select {}
}

// killedPublish runs childPublish in a child process and kills it with SIGKILL once it stalls.
func killedPublish(t *testing.T, cfg config.RegistryConfig, dir string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", childEnv+"_STORE="+cfg.Store, childEnv+"_ENDPOINT="+cfg.S3.Endpoint,
		childEnv+"_AK="+cfg.S3.AccessKey, childEnv+"_SK="+cfg.S3.SecretKey, childEnv+"_CKPT="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if strings.TrimSpace(line) != "stalled" {
		t.Fatalf("child publisher said %q before it was killed, want stalled", line)
	}
}

// leftovers lists every object of version 1 of "killed", and whether a file store holds a
// hidden temporary there.
func leftovers(t *testing.T, r *Registry) (keys []string, temp bool) {
	t.Helper()
	keys, err := r.listAll(context.Background(), versionPrefix("killed", 1))
	if err != nil {
		t.Fatal(err)
	}
	if fb, ok := r.store.(*fileBackend); ok {
		filepath.WalkDir(fb.path("models/killed"), func(path string, d os.DirEntry, err error) error {
			if err == nil && atomicfile.IsTemp(d.Name()) {
				temp = true
			}
			return nil
		})
	}
	return keys, temp
}

func stores(t *testing.T) map[string]func(*testing.T) config.RegistryConfig {
	return map[string]func(*testing.T) config.RegistryConfig{
		"file":  fileConfig,
		"minio": func(t *testing.T) config.RegistryConfig { return s3Config(t, false) },
	}
}

func TestKilledPublishIsCollected(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			cfg := mk(t)
			killedPublish(t, cfg, makeCheckpoint(t, 1))
			r := open(t, cfg)
			ctx := context.Background()
			keys, temp := leftovers(t, r)
			if len(keys) == 0 || (name == "file" && !temp) {
				t.Fatalf("the killed publish left %v (temporary: %v): the test did not kill it mid-upload", keys, temp)
			}
			if vs, err := r.Versions(ctx, "killed"); err != nil || len(vs) != 0 {
				t.Fatalf("versions after the kill: %v, %v; want none", vs, err)
			}
			// Younger than the stale age: a publish that may still run is left alone.
			if g, _, err := r.GC(ctx, StaleAge, false); err != nil || len(g) != 0 {
				t.Fatalf("gc of a fresh claim: %v, %v; want nothing removed", g, err)
			}
			g, _, err := r.GC(ctx, 0, true)
			if err != nil || len(g) != 1 || g[0].Ref != "killed@1" || g[0].PID == 0 {
				t.Fatalf("gc --dry-run: %+v, %v; want killed@1 with its claim's pid", g, err)
			}
			if after, _ := leftovers(t, r); len(after) != len(keys) {
				t.Fatalf("gc --dry-run removed objects: %v, then %v", keys, after)
			}
			if _, _, err := r.GC(ctx, 0, false); err != nil {
				t.Fatal(err)
			}
			if keys, temp := leftovers(t, r); len(keys) != 0 || temp {
				t.Fatalf("after gc: %v left (temporary: %v)", keys, temp)
			}
			v, err := r.Publish(ctx, "killed", makeCheckpoint(t, 2))
			if err != nil || v.Number != 1 {
				t.Fatalf("publish after gc: %v, %v; want killed@1 (the number taken again)", v.Ref(), err)
			}
		})
	}
}

func TestPublishAfterAKilledOneTakesItsNumber(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			cfg := mk(t)
			killedPublish(t, cfg, makeCheckpoint(t, 1))
			r := open(t, cfg)
			r.staleAge = 0 // the claim's hour has passed
			v, err := r.Publish(context.Background(), "killed", makeCheckpoint(t, 2))
			if err != nil || v.Number != 1 {
				t.Fatalf("publish after a killed one: %v, %v; want killed@1", v.Ref(), err)
			}
			keys, temp := leftovers(t, r)
			if temp || len(keys) != len(v.Manifest.Files)+2 { // the files, the manifest, the claim
				t.Errorf("version 1 holds %v (temporary: %v), want only the new publish's objects", keys, temp)
			}
		})
	}
}

// A publish whose claim was removed while it uploaded (it stalled past the stale age and a gc
// ran) fails and makes no version; a publish with a live claim beside it takes the next number.
func TestPublishWhoseClaimWasTakenOverFails(t *testing.T) {
	cfg := fileConfig(t)
	r := open(t, cfg)
	ctx := context.Background()
	r.beforeManifest = func() {
		r.beforeManifest = nil
		if _, _, err := r.GC(ctx, 0, false); err != nil {
			t.Error(err)
		}
	}
	_, err := r.Publish(ctx, "taken", makeCheckpoint(t, 1))
	if !errors.Is(err, ErrClaimLost) || !strings.Contains(err.Error(), "no version was created") {
		t.Fatalf("publish after its claim was removed: %v, want %v", err, ErrClaimLost)
	}
	if vs, err := r.Versions(ctx, "taken"); err != nil || len(vs) != 0 {
		t.Fatalf("versions: %v, %v; want none", vs, err)
	}
	v, err := r.Publish(ctx, "taken", makeCheckpoint(t, 2))
	if err != nil || v.Number != 1 {
		t.Fatalf("next publish: %v, %v; want taken@1", v.Ref(), err)
	}
}

// A claim younger than the stale age may belong to a publish in flight: the next publish
// leaves it and takes the number after it.
func TestFreshClaimIsKept(t *testing.T) {
	cfg := fileConfig(t)
	killedPublish(t, cfg, makeCheckpoint(t, 1))
	r := open(t, cfg)
	v, err := r.Publish(context.Background(), "killed", makeCheckpoint(t, 2))
	if err != nil || v.Number != 2 {
		t.Fatalf("publish beside a fresh claim: %v, %v; want killed@2", v.Ref(), err)
	}
	if keys, _ := leftovers(t, r); len(keys) == 0 {
		t.Error("the fresh claim of version 1 was removed")
	}
}
