// Command schedrl trains, evaluates and publishes scheduling policies for shared GPU clusters.
// Each subcommand lives in its own file and only parses flags and calls a package.
package main

import (
	"fmt"
	"os"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/spf13/cobra"
)

var rootCmd = &cobra.Command{
	Use:           "schedrl",
	Short:         "Train scheduling policies for shared GPU clusters (offline BC, then PPO)",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func main() {
	rootCmd.AddCommand(newServeCmd())
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "schedrl:", err)
		os.Exit(1)
	}
}

// loadConfig loads the effective config for a command: its --config file, SCHEDRL_ env
// variables and its flags, over the built-in defaults.
func loadConfig(cmd *cobra.Command) (config.Config, error) {
	path, _ := cmd.Flags().GetString(config.ConfigFlag)
	return config.Load(path, cmd.Flags())
}
