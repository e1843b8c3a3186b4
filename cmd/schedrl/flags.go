package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/schedrl/schedrl/internal/manifestkind"
)

// outputAnnotation marks a flag that names an output: "file", or the kind of directory it
// writes (manifestkind: "checkpoint", "dataset", "eval report", "folder of logs").
// checkFlags runs checkOutputs before every command.
const outputAnnotation = "schedrl_output"

const fileOutput = "file"

func markOutput(f *pflag.FlagSet, name, kind string) {
	if err := f.SetAnnotation(name, outputAnnotation, []string{kind}); err != nil {
		panic(err) // a flag name typed wrong in a constructor
	}
}

// checkFlags runs before every command: the output rule and finite numbers.
func checkFlags(cmd *cobra.Command, args []string) error {
	return errors.Join(checkOutputs(cmd, args), checkFinite(cmd))
}

// checkOutputs applies the one rule for outputs (docs/reliability.md) to every output flag the
// user set, before any work is done: a command creates only the last path element, so its
// folder must exist; a file output must not name a directory; a directory output may be an
// existing folder only of its own kind (or empty): a dataset is never an eval report, and
// --force replaces only a folder of the command's own kind.
func checkOutputs(cmd *cobra.Command, _ []string) error {
	var errs []error
	force := false
	if fl := cmd.Flags().Lookup("force"); fl != nil && fl.Value.Type() == "bool" {
		force = fl.Value.String() == "true"
	}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		kind := fl.Annotations[outputAnnotation]
		path := fl.Value.String()
		if len(kind) == 0 || path == "" {
			return
		}
		if err := checkOutput("--"+fl.Name, path, kind[0], force); err != nil {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}

// checkOutput checks one output path of the given kind (fileOutput or a manifestkind.Kind).
func checkOutput(name, path, kind string, force bool) error {
	parent := filepath.Dir(path)
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		return fmt.Errorf("%s %s: folder %s does not exist (create it first)", name, path, parent)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if kind == fileOutput {
		if st.IsDir() {
			return fmt.Errorf("%s names a file, but %s is a directory", name, path)
		}
		return nil
	}
	if !st.IsDir() {
		return fmt.Errorf("%s names a directory (%s), but %s is a file", name, article(kind), path)
	}
	got, err := manifestkind.DirOf(path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", name, path, err)
	}
	switch {
	case got == manifestkind.Empty || string(got) == kind:
		return nil
	case got != manifestkind.Unknown:
		return fmt.Errorf("%s %s is %s, and this command writes %s there: name another folder", name, path, article(string(got)), article(kind))
	case force:
		return fmt.Errorf("%s %s holds files that are not %s: --force replaces only %s", name, path, article(kind), article(kind))
	}
	return nil
}

// article puts "a" or "an" before a kind's name.
func article(kind string) string {
	if strings.ContainsAny(kind[:1], "aeiou") {
		return "an " + kind
	}
	return "a " + kind
}

// checkFinite refuses NaN and ±Inf in every float flag the user set, naming the flag: no flag
// means them, and arithmetic on them ends in silent nonsense (a mean JCT of 0).
func checkFinite(cmd *cobra.Command) error {
	var errs []error
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Value.Type() != "float64" && fl.Value.Type() != "float64Slice" {
			return
		}
		for _, v := range strings.Split(strings.Trim(fl.Value.String(), "[]"), ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
				errs = append(errs, fmt.Errorf("invalid argument %q for \"--%s\" flag: want a finite number", v, fl.Name))
				return
			}
		}
	})
	return errors.Join(errs...)
}

// intAtLeast is an int flag refusing values below min when parsed, so that an out-of-range
// value fails before any work.
type intAtLeast struct {
	p   *int
	min int
}

func (v intAtLeast) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v intAtLeast) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want an integer")
	}
	if n < v.min {
		return fmt.Errorf("must be >= %d", v.min)
	}
	*v.p = n
	return nil
}

func (intAtLeast) Type() string { return "int" }

func intFlag(f *pflag.FlagSet, p *int, name string, value, min int, usage string) {
	*p = value
	f.Var(intAtLeast{p, min}, name, usage)
}

// positiveDuration is a duration flag refusing zero and negative values when parsed.
type positiveDuration struct{ p *time.Duration }

func (v positiveDuration) String() string {
	if v.p == nil {
		return "0s"
	}
	return v.p.String()
}

func (v positiveDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 3s")
	}
	if d <= 0 {
		return fmt.Errorf("must be > 0")
	}
	*v.p = d
	return nil
}

func (positiveDuration) Type() string { return "duration" }

func durationFlag(f *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	f.Var(positiveDuration{p}, name, usage)
}
