package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []uint64
		wantErr string
	}{
		{in: "49-53", want: []uint64{49, 50, 51, 52, 53}},
		{in: "49,50, 51", want: []uint64{49, 50, 51}},
		{in: "42,49-51", want: []uint64{42, 49, 50, 51}},
		{in: "7", want: []uint64{7}},
		{in: "", wantErr: "not a seed"},
		{in: "a-b", wantErr: `"a-b"`},
		{in: "53-49", wantErr: "A <= B"},
		{in: "49-51,50", wantErr: "seed 50 is listed twice"},
		{in: "1-99999999", wantErr: "more than"},
		{in: "-3", wantErr: "not a seed"},
		// Issue 34: seeds at the top of uint64 end (the loop once never did), and the limit
		// holds across parts too.
		{in: "18446744073709551615", want: []uint64{18446744073709551615}},
		{in: "18446744073709551610-18446744073709551615", want: []uint64{18446744073709551610, 18446744073709551611,
			18446744073709551612, 18446744073709551613, 18446744073709551614, 18446744073709551615}},
		{in: "0-9000,10000-19000", wantErr: "lists more than 10000 seeds"},
	} {
		got, err := ParseSeeds(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseSeeds(%q) error = %v, want it to mention %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseSeeds(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestEvalConfigValidate(t *testing.T) {
	var def EvalConfig
	def.SetDefaults()
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults are invalid: %v", err)
	}
	for _, tc := range []struct {
		name    string
		edit    func(*EvalConfig)
		wantErr string
	}{
		{"no policies", func(c *EvalConfig) { c.Policies = nil }, "policies:"},
		{"blank policy", func(c *EvalConfig) { c.Policies = []string{"fgd", " "} }, "policies[1]"},
		{"no traces", func(c *EvalConfig) { c.Traces = nil }, "traces:"},
		{"zero tune", func(c *EvalConfig) { c.Tune = 0 }, "tune:"},
		{"bad seeds", func(c *EvalConfig) { c.Seeds = "x" }, "seeds:"},
		{"negative parallelism", func(c *EvalConfig) { c.Parallelism = -1 }, "parallelism:"},
		{"no out", func(c *EvalConfig) { c.Out = "" }, "out:"},
		{"baseline not evaluated", func(c *EvalConfig) { c.Baseline = "fgdd" }, "baseline:"},
		{"baseline evaluated", func(c *EvalConfig) { c.Baseline = "bestfit" }, ""},
		{"overlay without table", func(c *EvalConfig) { c.Paper = "" }, "paper:"},
		{"no overlay, no table", func(c *EvalConfig) { c.Paper, c.PaperOverlay = "", false }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := def
			tc.edit(&c)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Fatalf("Validate() = %v, want an error starting %q", err, tc.wantErr)
			}
		})
	}
}

func TestLoadEvalSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	yaml := "eval:\n  policies: [fgd, \"ckpt:runs/bc\"]\n  traces: [default]\n  seeds: 49-51\n  tune: 1.2\n  paper_overlay: false\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Eval
	if !slices.Equal(e.Policies, []string{"fgd", "ckpt:runs/bc"}) || e.Seeds != "49-51" || e.Tune != 1.2 ||
		e.PaperOverlay || e.Out != "runs/eval" {
		t.Fatalf("eval section = %+v", e)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("eval:\n  seeds: 53-49\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad, nil); err == nil || !strings.Contains(err.Error(), "eval.seeds") {
		t.Fatalf("bad seeds: %v, want an error naming eval.seeds", err)
	}
}
