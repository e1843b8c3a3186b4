package main

import (
	"context"
	"strings"
	"testing"
)

// TestServeExtenderListensOnLoopbackByDefault: without --listen the extender is reachable
// only from its own host; other interfaces are asked for.
func TestServeExtenderListensOnLoopbackByDefault(t *testing.T) {
	cmd := newServeExtenderCmd(func(context.Context, *serveExtenderOptions) error { return nil })
	if got := cmd.Flags().Lookup("listen").DefValue; got != "127.0.0.1:8888" {
		t.Fatalf("--listen default %q, want 127.0.0.1:8888", got)
	}
}

// TestServeOffClusterSuggestsKubeconfig: outside a pod, without --kubeconfig, the error says
// which flag to pass.
func TestServeOffClusterSuggestsKubeconfig(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	_, err := kubeFlags{}.client()
	if err == nil || !strings.Contains(err.Error(), "pass --kubeconfig") {
		t.Fatalf("err = %v, want one suggesting --kubeconfig", err)
	}
}
