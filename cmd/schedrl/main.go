// Command schedrl trains, evaluates and publishes scheduling policies for shared GPU clusters.
// Each subcommand lives in its own file, following cli/cli's pattern: newXCmd builds the cobra
// command and fills an options struct from the flags, runX(ctx, opts) does the work, and a
// test passes its own runF to check the parsed options without running anything.
package main

import (
	"fmt"
	"os"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/spf13/cobra"
)

// newRootCmd lists the subcommands; a new one is one more entry here.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "schedrl",
		Short:         "Train scheduling policies for shared GPU clusters (offline BC, then PPO)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newSimCmd(nil),
		newDatasetsCmd(),
		newPretrainCmd(nil),
		newFinetuneCmd(nil),
		newEvalCmd(nil),
		newDefragCmd(),
		newRegistryCmd(),
		newPipelineCmd(),
		newDoctorCmd(nil),
		newConfigCmd(),
		newVersionCmd(nil),
	)
	return root
}

func main() {
	if err := newRootCmd().Execute(); err != nil {
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
