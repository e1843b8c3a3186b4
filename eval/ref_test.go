package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParsePolicyRef(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    PolicyRef
		wantErr string
	}{
		{in: "fgd", want: PolicyRef{Raw: "fgd", Kind: Heuristic, Name: "fgd"}},
		{in: " BestFit ", want: PolicyRef{Raw: "BestFit", Kind: Heuristic, Name: "bestfit"}},
		{in: "ckpt:runs/bc", want: PolicyRef{Raw: "ckpt:runs/bc", Kind: Checkpoint, Dir: "runs/bc"}},
		{in: "placer@3", want: PolicyRef{Raw: "placer@3", Kind: Registry, Name: "placer", Tag: "3"}},
		{in: "placer@champion", want: PolicyRef{Raw: "placer@champion", Kind: Registry, Name: "placer", Tag: "champion"}},
		{in: "", wantErr: "empty"},
		{in: "ckpt:", wantErr: "needs a directory"},
		{in: "@3", wantErr: "MODEL@VERSION"},
		{in: "m@", wantErr: "MODEL@VERSION"},
		{in: "m@1@2", wantErr: "MODEL@VERSION"},
	} {
		got, err := ParsePolicyRef(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParsePolicyRef(%q) error = %v, want it to mention %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParsePolicyRef(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseTraceRef(t *testing.T) {
	dir := t.TempDir()
	named := filepath.Join(dir, "openb_pod_list_gpushare40.csv")
	other := filepath.Join(dir, "mine.csv")
	for _, p := range []string{named, other} {
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		in, name, path, wantErr string
	}{
		{in: "gpushare40", name: "gpushare40", path: named},
		{in: named, name: "gpushare40", path: named},
		{in: other, name: "mine", path: other},
		{in: "gpushare41", wantErr: `trace "gpushare41"`},
		{in: filepath.Join(dir, "nope.csv"), wantErr: "nope.csv"},
		{in: " ", wantErr: "empty"},
	} {
		got, err := ParseTraceRef(tc.in, dir)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseTraceRef(%q) error = %v, want it to mention %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.Name != tc.name || got.Path != tc.path {
			t.Errorf("ParseTraceRef(%q) = %+v, %v; want name %q path %q", tc.in, got, err, tc.name, tc.path)
		}
	}
}
