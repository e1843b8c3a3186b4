package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsGiveTheClusterPath: README.md, docs/deploy.md and docs/decision-log.md each give the
// path from "we run kube-scheduler" to a trained, shadowed, promoted policy with its commands
// (issue 40), and every `schedrl ...` command they quote names a command and flags the CLI has.
func TestDocsGiveTheClusterPath(t *testing.T) {
	steps := []string{"kubectl get nodes,pods", "schedrl logs import", "pipeline.logs.source", "schedrl serve extender",
		"--log-dir", "--shadow placement@candidate", "schedrl eval --shadow", "schedrl registry promote", "--alias champion"}
	span := regexp.MustCompile("`((?:bin/)?schedrl [^`]+)`")
	root := newRootCmd()
	for _, doc := range []string{"README.md", "docs/deploy.md", "docs/decision-log.md"} {
		data, err := os.ReadFile(filepath.Join(repoRoot, doc))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for _, s := range steps {
			if !strings.Contains(text, s) {
				t.Errorf("%s does not give the step %q", doc, s)
			}
		}
		for _, m := range span.FindAllStringSubmatch(text, -1) {
			words := strings.Fields(m[1])[1:]
			c, rest, err := root.Find(words)
			if err != nil || c == root {
				t.Errorf("%s: `%s`: no such command", doc, m[1])
				continue
			}
			for _, w := range rest {
				name, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
				if strings.HasPrefix(w, "--") && name != "" && c.Flag(name) == nil {
					t.Errorf("%s: `%s`: %s has no flag --%s", doc, m[1], c.CommandPath(), name)
				}
			}
		}
	}
}
