// Command schedrl trains, evaluates and publishes scheduling policies for shared GPU clusters.
// Each subcommand lives in its own file and only parses flags and calls a package.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

var rootCmd = &cobra.Command{
	Use:           "schedrl",
	Short:         "Train scheduling policies for shared GPU clusters (offline BC, then PPO)",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func main() {
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "schedrl:", err)
		os.Exit(1)
	}
}
