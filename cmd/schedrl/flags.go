package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// outputAnnotation marks a flag that names an output: "file" or "dir". checkOutputs runs before
// every command.
const outputAnnotation = "schedrl_output"

func markOutput(f *pflag.FlagSet, name, kind string) {
	if err := f.SetAnnotation(name, outputAnnotation, []string{kind}); err != nil {
		panic(err) // a flag name typed wrong in a constructor
	}
}

// checkOutputs checks every output flag the user set before any work is done: its folder
// must exist (a command creates only the leaf), and a file output must not name a directory.
func checkOutputs(cmd *cobra.Command, _ []string) error {
	var errs []error
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		kind := fl.Annotations[outputAnnotation]
		path := fl.Value.String()
		if len(kind) == 0 || path == "" {
			return
		}
		parent := filepath.Dir(path)
		if st, err := os.Stat(parent); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("--%s %s: folder %s does not exist (create it first)", fl.Name, path, parent))
			return
		}
		if st, err := os.Stat(path); err == nil && st.IsDir() && kind[0] == "file" {
			errs = append(errs, fmt.Errorf("--%s names a file, but %s is a directory", fl.Name, path))
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
