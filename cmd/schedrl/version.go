package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set by the Makefile: -ldflags "-X main.version=... -X main.revision=...".
var (
	version  = "dev"
	revision = ""
)

// buildRevision is the git revision of this binary: the linker's, else what the go tool
// recorded (when built with VCS stamping), else "unknown".
func buildRevision() string {
	if revision != "" {
		return revision
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

type versionOptions struct{ Out io.Writer }

func newVersionCmd(runF func(context.Context, *versionOptions) error) *cobra.Command {
	if runF == nil {
		runF = runVersion
	}
	opts := &versionOptions{}
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, git revision and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Out = cmd.OutOrStdout()
			return runF(cmd.Context(), opts)
		},
	}
}

func runVersion(_ context.Context, opts *versionOptions) error {
	_, err := fmt.Fprintf(opts.Out, "schedrl %s\nrevision %s\n%s %s/%s\n",
		version, buildRevision(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}
