package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/internal/config"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect the configuration"}
	cmd.AddCommand(newConfigShowCmd(nil))
	return cmd
}

type configShowOptions struct {
	Out    io.Writer
	Config config.Config
}

func newConfigShowCmd(runF func(context.Context, *configShowOptions) error) *cobra.Command {
	if runF == nil {
		runF = runConfigShow
	}
	opts := &configShowOptions{}
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the effective config (defaults < file < SCHEDRL_* env < flags) as YAML, secrets redacted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			opts.Out, opts.Config = cmd.OutOrStdout(), cfg
			return runF(cmd.Context(), opts)
		},
	}
	config.AddFlags(cmd.Flags(), "")
	return cmd
}

func runConfigShow(_ context.Context, opts *configShowOptions) error {
	out, err := config.Show(opts.Config)
	if err != nil {
		return err
	}
	_, err = opts.Out.Write(out)
	return err
}
