package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/kube/shadowlog"
)

// ShadowSummary reads the shadow logs a glob names (the extender's --shadow-log files, in
// name order, which is time order) and summarises the period.
func ShadowSummary(glob string) (shadowlog.Summary, []string, error) {
	files, err := filepath.Glob(glob)
	if err != nil {
		return shadowlog.Summary{}, nil, fmt.Errorf("--shadow %q: %w", glob, err)
	}
	if len(files) == 0 {
		return shadowlog.Summary{}, nil, fmt.Errorf("--shadow %q: no file matches (the extender writes shadow-*.jsonl into --shadow-log)", glob)
	}
	slices.Sort(files)
	recs, err := shadowlog.Read(files)
	if err != nil {
		return shadowlog.Summary{}, nil, err
	}
	s, err := shadowlog.Summarize(recs)
	if err != nil {
		return shadowlog.Summary{}, nil, fmt.Errorf("--shadow %q: %w", glob, err)
	}
	return s, files, nil
}

// WriteShadowText prints a summary for people.
func WriteShadowText(w io.Writer, s shadowlog.Summary, files int) {
	fmt.Fprintf(w, "shadow period %s .. %s, %d decisions from %d files\n", s.From.UTC().Format("2006-01-02T15:04:05Z"),
		s.To.UTC().Format("2006-01-02T15:04:05Z"), s.Decisions, files)
	fmt.Fprintf(w, "serving: %s\nshadow:  %s\n", strings.Join(s.ServingModel, ", "), strings.Join(s.ShadowModel, ", "))
	fmt.Fprintf(w, "agreement        %.4f (95%% CI %.4f..%.4f; %d of %d same node and GPUs; shadow found no place for %d)\n",
		s.Agreement, s.AgreementLo, s.AgreementHi, s.Agree, s.Decisions, s.ShadowUnplaced)
	fmt.Fprintf(w, "frag difference  %+.2f milli-GPU per pod, %+.1f in all (shadow minus serving; negative: the shadow fragments less)\n",
		s.FragDiffMean, s.FragDiffSum)
	fmt.Fprintf(w, "latency serving  p50 %.0f us, p99 %.0f us\n", s.ServingP50US, s.ServingP99US)
	fmt.Fprintf(w, "latency shadow   p50 %.0f us, p99 %.0f us\n", s.ShadowP50US, s.ShadowP99US)
}

// WriteShadowJSON writes the summary to path atomically (temporary name, then rename).
func WriteShadowJSON(path string, s shadowlog.Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("--shadow-json: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--shadow-json: %w", err)
	}
	return nil
}
