package eval

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/config"
)

// onlineSection is a short defrag-online timeline on the small cluster: a check every 30 s,
// acting at each.
func onlineSection() *config.DefragOnlineConfig {
	var c config.DefragOnlineConfig
	c.SetDefaults()
	c.Duration, c.Warmup, c.Cap = 3000, 300, 0
	c.Every, c.HeadWait = 30, 0
	return &c
}

// The defrag-online kind runs each method as the defragmenter of the same timelines: none
// migrates nothing, greedy does, and every run reports the whole-GPU queueing delay the gate
// reads.
func TestRunTimedDefragOnline(t *testing.T) {
	nodes, pods := smallCluster(t)
	cfg := timedConfig(t, "defrag-online")
	cfg.Nodes, cfg.TracesDir, cfg.Traces = nodes, filepath.Dir(pods), []string{"small"}
	cfg.Policies = []string{"none", "greedy", "make-room"}
	cfg.Seeds, cfg.Timed.Load, cfg.Timed.SeriesStep = "1-3", 1.2, 30
	m, err := RunTimed(context.Background(), cfg, Options{Log: quiet, DefragOnline: onlineSection()})
	if err != nil {
		t.Fatal(err)
	}
	checkTimedOutputs(t, cfg, m)
	migrated := map[string]int{}
	for _, r := range m.Results {
		for _, run := range r.PerSeed {
			if _, ok := run.QueueDelay[WholeGPUDelay]; !ok {
				t.Errorf("%s seed %d: no %s queueing delay in %v", r.Policy, run.Seed, WholeGPUDelay, run.QueueDelay)
			}
			migrated[r.Policy] += run.Migrations
			if run.Migrations == 0 && run.DowntimeS != 0 {
				t.Errorf("%s seed %d: downtime %v without migrations", r.Policy, run.Seed, run.DowntimeS)
			}
		}
	}
	if migrated["none"] != 0 || migrated["greedy"] == 0 {
		t.Errorf("migrations by method %v: none must migrate nothing, greedy something", migrated)
	}
	scores, err := m.Score("queue_delay_whole-gpu_mean_s")
	if err != nil || len(scores["greedy"]["small"]) != 3 {
		t.Errorf("gate scores %v, %v", scores, err)
	}
}

// An unknown method, a checkpoint without a resolver, a missing defrag_online section or a
// load out of range is refused before any run, naming it; nothing is written.
func TestRunTimedDefragOnlineBadInput(t *testing.T) {
	nodes, pods := smallCluster(t)
	for _, c := range []struct {
		want string
		set  func(*config.EvalConfig, *Options)
	}{
		{`policy "no-such-method"`, func(c *config.EvalConfig, _ *Options) { c.Policies = []string{"none", "no-such-method"} }},
		{`policy "defrag@champion"`, func(c *config.EvalConfig, _ *Options) { c.Policies = []string{"none", "defrag@champion"} }},
		{"defrag_online section", func(_ *config.EvalConfig, o *Options) { o.DefragOnline = nil }},
		{"defrag_online.budget", func(_ *config.EvalConfig, o *Options) { o.DefragOnline.Budget = 0 }},
		{"timed.load", func(c *config.EvalConfig, _ *Options) { c.Timed.Load = 0 }},
	} {
		cfg := timedConfig(t, "defrag-online")
		cfg.Nodes, cfg.TracesDir, cfg.Traces = nodes, filepath.Dir(pods), []string{"small"}
		cfg.Policies, cfg.Seeds, cfg.Timed.Load = []string{"none", "greedy"}, "1", 1.2
		opts := Options{Log: quiet, DefragOnline: onlineSection()}
		c.set(&cfg, &opts)
		if _, err := RunTimed(context.Background(), cfg, opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want one naming %s", err, c.want)
		}
		if _, err := os.Stat(cfg.Out); !os.IsNotExist(err) {
			t.Errorf("%s: the refused evaluation left %s (%v)", c.want, cfg.Out, err)
		}
	}
}
