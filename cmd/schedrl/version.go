package main

import (
	"fmt"
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

func init() {
	rootCmd.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version, git revision and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "schedrl %s\nrevision %s\n%s %s/%s\n",
				version, buildRevision(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	})
}
