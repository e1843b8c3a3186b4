// The package graph's rule (docs/design.md): internal/ is the ground floor. Its packages
// import the standard library, third-party modules and each other, never the product
// packages above them; test helpers that build a product package's values live beside that
// package (sim/simtest, fungible/fungibletest, kube/kubetest), and only tests import them.
package internal_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goPackage is what `go list` says of one package of the module.
type goPackage struct {
	path    string
	imports []string
}

// modulePackages lists the module's packages with their non-test imports, in plain module
// mode as a fresh clone sees it (scripts/packages.sh lists them the same way).
func modulePackages(t *testing.T) (module string, pkgs []goPackage) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(cmd.Environ(), "GOWORK=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
	module = strings.TrimSpace(run("list", "-m"))
	for _, line := range strings.Split(strings.TrimSpace(run("list", "-e", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")), "\n") {
		fields := strings.Fields(line)
		pkgs = append(pkgs, goPackage{path: fields[0], imports: fields[1:]})
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages in %s", len(pkgs), root)
	}
	return module, pkgs
}

// TestInternalIsTheGroundFloor fails on an arrow from a package under internal/ up into a
// product package of the module.
func TestInternalIsTheGroundFloor(t *testing.T) {
	module, pkgs := modulePackages(t)
	internal := module + "/internal/"
	for _, p := range pkgs {
		if !strings.HasPrefix(p.path, internal) {
			continue
		}
		for _, imp := range p.imports {
			if strings.HasPrefix(imp, module+"/") && !strings.HasPrefix(imp, internal) {
				t.Errorf("%s imports %s: internal/ packages may import only each other inside the module (move the code that needs %s beside it, e.g. a %s/…test helper)",
					strings.TrimPrefix(p.path, module+"/"), strings.TrimPrefix(imp, module+"/"), strings.TrimPrefix(imp, module+"/"), strings.TrimPrefix(imp, module+"/"))
			}
		}
	}
}

// TestHelpersOnlyInTests fails when a product package imports a test helper (a package whose
// own code imports "testing"): helpers are for _test.go files, so the binary never links them.
func TestHelpersOnlyInTests(t *testing.T) {
	_, pkgs := modulePackages(t)
	helper := map[string]bool{}
	for _, p := range pkgs {
		helper[p.path] = slices.Contains(p.imports, "testing")
	}
	for _, p := range pkgs {
		if helper[p.path] {
			continue
		}
		for _, imp := range p.imports {
			if helper[imp] {
				t.Errorf("%s imports the test helper %s", p.path, imp)
			}
		}
	}
}
