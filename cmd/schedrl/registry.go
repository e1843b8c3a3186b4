package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/registry"
)

// Credentials are deliberately not flags: they come from the config file or the environment.
func init() {
	reg := &cobra.Command{
		Use:   "registry",
		Short: "Versioned checkpoints in the object store (file:// or s3://), mirrored to MLflow",
		Long: "The registry keeps every published checkpoint as an immutable version\n" +
			"models/NAME/N/{model.ot,report/...,manifest.json} in registry.store. Credentials come from\n" +
			"the config (registry.s3.access_key, ...), SCHEDRL_REGISTRY_* or AWS_*/MLFLOW_TRACKING_* env,\n" +
			"never from flags. References: MODEL@N, MODEL@ALIAS, MODEL@latest or MODEL.",
	}
	reg.PersistentFlags().String("store", "", "store URL, file://DIR or s3://BUCKET/PREFIX (default: registry.store)")
	config.AddFlags(reg.PersistentFlags(), "")
	reg.AddCommand(registryPublishCmd(), registryListCmd(), registryShowCmd(), registryPullCmd(),
		registryPromoteCmd(), registryDiffCmd(), registrySyncCmd(), registryServeCmd())
	rootCmd.AddCommand(reg)
}

// openRegistry loads the config, applies --store and opens the registry.
func openRegistry(cmd *cobra.Command) (*registry.Registry, error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, err
	}
	if store, _ := cmd.Flags().GetString("store"); store != "" {
		cfg.Registry.Store = store
	}
	return registry.Open(cfg.Registry, slog.Default())
}

func registryPublishCmd() *cobra.Command {
	var model string
	cmd := &cobra.Command{
		Use:     "publish CKPT_DIR --model NAME",
		Short:   "Publish a checkpoint directory as the next version of a model",
		Example: "  schedrl registry publish runs/finetune/ckpt --model defrag-ppo --store s3://models/team",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := openRegistry(cmd)
			if err != nil {
				return err
			}
			v, err := r.Publish(cmd.Context(), model, args[0])
			if err != nil {
				return err
			}
			state := "published"
			if v.Existing {
				state = "already published as"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s  %s\n", state, v.Ref(), v.URI)
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "model name (letters, digits, . _ -)")
	cmd.MarkFlagRequired("model")
	return cmd
}

func registryListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list [MODEL]",
		Short: "List versions: created, aliases, metrics, dataset and code revision",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := openRegistry(cmd)
			if err != nil {
				return err
			}
			models := args
			if len(models) == 0 {
				if models, err = r.Models(cmd.Context()); err != nil {
					return err
				}
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "VERSION\tCREATED\tALIASES\tMETRICS\tDATASET\tCODE")
			for _, m := range models {
				versions, err := r.Versions(cmd.Context(), m)
				if err != nil {
					return err
				}
				for _, v := range versions {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Ref(), v.Manifest.Created.Format("2006-01-02 15:04"),
						dash(strings.Join(v.Aliases, ",")), dash(metricList(v.Manifest.Metrics)),
						dash(short(v.Manifest.DatasetHash)), dash(short(v.Manifest.CodeRevision)))
				}
			}
			return w.Flush()
		},
	}
}

func registryShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show MODEL@VERSION|MODEL@ALIAS",
		Short: "Show one version: lineage, hyper-parameters, metrics and files",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := openRegistry(cmd)
			if err != nil {
				return err
			}
			v, err := r.Resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			showVersion(cmd.OutOrStdout(), v)
			return nil
		},
	}
}

func showVersion(out io.Writer, v registry.Version) {
	m := v.Manifest
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, row := range [][2]string{
		{"version", v.Ref()}, {"uri", v.URI}, {"digest", v.Digest}, {"aliases", dash(strings.Join(v.Aliases, ","))},
		{"created", m.Created.Format("2006-01-02 15:04:05Z07:00")}, {"model", m.Model},
		{"env", fmt.Sprintf("%s (features v%d)", m.Env, m.FeatureVersion)}, {"dataset", dash(m.DatasetHash)},
		{"config", dash(m.ConfigHash)}, {"code", dash(m.CodeRevision)}, {"parent", dash(m.Parent)},
	} {
		fmt.Fprintf(w, "%s\t%s\n", row[0], row[1])
	}
	for _, k := range slices.Sorted(maps.Keys(m.Hyper)) {
		fmt.Fprintf(w, "hyper.%s\t%v\n", k, m.Hyper[k])
	}
	for _, k := range slices.Sorted(maps.Keys(m.Metrics)) {
		fmt.Fprintf(w, "metrics.%s\t%.6g\n", k, m.Metrics[k])
	}
	for _, f := range m.Files {
		fmt.Fprintf(w, "file %s\t%d bytes  sha256 %s\n", f.Path, f.Size, f.SHA256)
	}
	w.Flush()
}

func registryPullCmd() *cobra.Command {
	var to string
	var force bool
	cmd := &cobra.Command{
		Use:   "pull MODEL@VERSION|MODEL@ALIAS --to DIR",
		Short: "Download a version into DIR, verifying every file's sha256",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := openRegistry(cmd)
			if err != nil {
				return err
			}
			v, err := r.Pull(cmd.Context(), args[0], to, force)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pulled %s to %s (%d files verified)\n", v.Ref(), to, len(v.Manifest.Files))
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "destination directory (must not exist unless --force)")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing destination")
	cmd.MarkFlagRequired("to")
	return cmd
}

func registryPromoteCmd() *cobra.Command {
	var alias string
	cmd := &cobra.Command{
		Use:   "promote MODEL@VERSION --alias NAME",
		Short: "Point an alias (e.g. champion) at a version, in the store and in MLflow",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := openRegistry(cmd)
			if err != nil {
				return err
			}
			v, err := r.Promote(cmd.Context(), args[0], alias)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s@%s -> %s\n", v.Model, alias, v.Ref())
			return nil
		},
	}
	cmd.Flags().StringVar(&alias, "alias", "champion", "alias to set")
	return cmd
}

func registryDiffCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "diff A B",
		Short: "Configuration, lineage and metric differences between two versions",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := openRegistry(cmd)
			if err != nil {
				return err
			}
			a, err := r.Resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			b, err := r.Resolve(cmd.Context(), args[1])
			if err != nil {
				return err
			}
			changes := registry.Diff(a, b)
			if len(changes) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%s and %s do not differ\n", a.Ref(), b.Ref())
				return nil
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "FIELD\t%s\t%s\tDELTA\n", a.Ref(), b.Ref())
			for _, c := range changes {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.Field, dash(c.A), dash(c.B), c.Delta)
			}
			return w.Flush()
		},
	}
}

func registrySyncCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sync",
		Short: "Mirror to MLflow every version and alias it lacks (after MLflow was down)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := openRegistry(cmd)
			if err != nil {
				return err
			}
			rep, err := r.Sync(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d models, %d versions newly mirrored\n", rep.Models, rep.Mirrored)
			return nil
		},
	}
}

func registryServeCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8080]",
		Short: "Serve a web page listing models, versions, metrics, lineage and report plots",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := openRegistry(cmd)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return r.Serve(ctx, addr, nil)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "listen address")
	return cmd
}

func metricList(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%.4g", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func short(s string) string { return s[:min(len(s), 12)] }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
