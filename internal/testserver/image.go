package testserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/schedrl/schedrl/internal/repotest"
)

// BuildImage builds schedrl's image as `make image` does (the binary with -trimpath and
// -s -w against setup's libtorch, then scripts/image), named ref, into dir, and returns the
// archive. It runs the Makefile's go commands, not make, which would run setup.
func BuildImage(ctx context.Context, dir, ref string) (string, error) {
	root := repotest.Root()
	deps, err := DepsDir()
	if err != nil {
		return "", err
	}
	bin, archive := filepath.Join(dir, "schedrl"), filepath.Join(dir, "schedrl-image.oci.tar")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/schedrl")
	build.Dir, build.Env = root, append(os.Environ(), "GOWORK="+filepath.Join(deps, "go.work"), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testserver: build schedrl: %w\n%s", err, out)
	}
	pack := exec.CommandContext(ctx, "go", "run", "./scripts/image", "--binary", bin, "--out", archive, "--name", ref, "--epoch", "0")
	pack.Dir, pack.Env = root, append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := pack.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testserver: scripts/image: %w\n%s", err, out)
	}
	return archive, nil
}
