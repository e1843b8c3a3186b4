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

// TestServeExtenderShadowFlagsSayWhatIsWrong: a bad shadow or poll setting stops the command
// before it pulls or serves anything, with the flag named; the defaults are the documented ones.
func TestServeExtenderShadowFlagsSayWhatIsWrong(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "extender", "--shadow", "placement@candidate", "--shadow-queue", "0"}, "--shadow-queue 0"},
		{[]string{"serve", "extender", "--shadow-log", "x"}, "--shadow-log x needs --shadow"},
		{[]string{"serve", "extender", "--model-poll", "-1s"}, "--model-poll -1s"},
	} {
		code, out := inProcess(t, c.args...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q, want %q", c.args, code, out, c.want)
		}
	}
	cmd := newServeExtenderCmd(func(context.Context, *serveExtenderOptions) error { return nil })
	for flag, want := range map[string]string{"shadow-queue": "256", "model-poll": "30s", "log-upload-interval": "30s"} {
		if got := cmd.Flags().Lookup(flag).DefValue; got != want {
			t.Errorf("--%s default %q, want %q", flag, got, want)
		}
	}
}
