package main

import (
	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/internal/config"
)

func init() {
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the effective config (defaults < file < SCHEDRL_* env < flags) as YAML, secrets redacted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			out, err := config.Show(cfg)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	config.AddFlags(show.Flags(), "")
	cfg := &cobra.Command{Use: "config", Short: "Inspect the configuration"}
	cfg.AddCommand(show)
	rootCmd.AddCommand(cfg)
}
