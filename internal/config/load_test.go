package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cfg.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// flagSet mimics a command: the standard config flags plus a --seed flag named like its key.
func flagSet(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlags(fs, "")
	fs.Int64("seed", 0, "seed")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestPrecedence(t *testing.T) {
	file := writeConfig(t, "seed: 2\ndevice:\n  threads: 2\n")
	tests := []struct {
		name        string
		path        string
		env         map[string]string
		args        []string
		wantSeed    int64
		wantThreads int
	}{
		{name: "defaults", wantSeed: 1, wantThreads: 0},
		{name: "file over defaults", path: file, wantSeed: 2, wantThreads: 2},
		{name: "env over file", path: file, env: map[string]string{"SCHEDRL_SEED": "3", "SCHEDRL_DEVICE_THREADS": "3"}, wantSeed: 3, wantThreads: 3},
		{name: "flag over env", path: file, env: map[string]string{"SCHEDRL_SEED": "3"}, args: []string{"--seed=4"}, wantSeed: 4, wantThreads: 2},
		{name: "--set over env", path: file, env: map[string]string{"SCHEDRL_DEVICE_THREADS": "3"}, args: []string{"--set", "device.threads=5"}, wantSeed: 2, wantThreads: 5},
		{name: "unchanged flag does not hide file", path: file, args: []string{}, wantSeed: 2, wantThreads: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg, err := Load(tt.path, flagSet(t, tt.args...))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Seed != tt.wantSeed || cfg.Device.Threads != tt.wantThreads {
				t.Errorf("seed=%d threads=%d, want seed=%d threads=%d", cfg.Seed, cfg.Device.Threads, tt.wantSeed, tt.wantThreads)
			}
			if cfg.Device.Name != "auto" {
				t.Errorf("device.name = %q, want the default auto", cfg.Device.Name)
			}
		})
	}
}

func TestLoadRejects(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  map[string]string
		args []string
		want []string // substrings of the error
	}{
		{
			name: "unknown key in a section",
			file: "device:\n  threds: 2\n",
			want: []string{"cfg.yaml:2:3", `unknown key "device.threds"`, `did you mean "device.threads"`},
		},
		{
			name: "unknown section",
			file: "seed: 1\nsimm:\n  x: 1\n",
			want: []string{"cfg.yaml:2:1", `unknown key "simm"`},
		},
		{
			name: "section that is not a mapping",
			file: "device: cpu\n",
			want: []string{"cfg.yaml:1:9", "device: want a mapping"},
		},
		{
			name: "negative size from the file",
			file: "device:\n  threads: -1\n",
			want: []string{"device.threads: must be >= 0, got -1", "cfg.yaml:2:3"},
		},
		{
			name: "unknown device name from env",
			env:  map[string]string{"SCHEDRL_DEVICE_NAME": "tpu"},
			want: []string{`device.name: unknown device "tpu"`, "env SCHEDRL_DEVICE_NAME"},
		},
		{
			name: "wrong type from a flag",
			args: []string{"--set", "device.threads=many"},
			want: []string{"device.threads", "flag --set device.threads=many"},
		},
		{
			name: "unknown key in --set",
			args: []string{"--set", "device.nme=cpu"},
			want: []string{`unknown key "device.nme"`, `did you mean "device.name"`},
		},
		{
			name: "malformed YAML",
			file: "seed: [1\n",
			want: []string{"cfg.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			path := ""
			if tt.file != "" {
				path = writeConfig(t, tt.file)
			}
			_, err := Load(path, flagSet(t, tt.args...))
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), nil)
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("err = %v, want one naming nope.yaml", err)
	}
}

func TestEmptySectionAccepted(t *testing.T) {
	if _, err := Load(writeConfig(t, "sim:\nregistry: {}\n"), nil); err != nil {
		t.Fatal(err)
	}
}

// The shipped config files must load as they are.
func TestShippedConfigs(t *testing.T) {
	paths, err := filepath.Glob("../../configs/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no configs found: %v", err)
	}
	for _, p := range paths {
		if _, err := Load(p, nil); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// Issue 26 case 10: a misspelled SCHEDRL_ variable is an error with a suggestion, like a
// misspelled file key.
func TestMisspelledEnvIsAnError(t *testing.T) {
	t.Setenv("SCHEDRL_SIM_NODE", "x.csv")
	_, err := Load("", nil)
	if err == nil || !strings.Contains(err.Error(), "env SCHEDRL_SIM_NODE names no config key (did you mean SCHEDRL_SIM_NODES?)") {
		t.Fatalf("got %v", err)
	}
}

// Issue 26 case 11: --set takes a list as a,b or [a, b].
func TestSetListInBrackets(t *testing.T) {
	for _, v := range []string{"fgd,bestfit", "[fgd,bestfit]", "[fgd, bestfit]", `["fgd", "bestfit"]`} {
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		AddFlags(f, "")
		if err := f.Parse([]string{"--set", "eval.policies=" + v}); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load("", f)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.Eval.Policies, []string{"fgd", "bestfit"}) {
			t.Errorf("--set eval.policies=%s: %q", v, cfg.Eval.Policies)
		}
	}
}
