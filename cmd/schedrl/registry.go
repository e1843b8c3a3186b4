package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/manifestkind"
	"github.com/schedrl/schedrl/registry"
)

// Credentials are deliberately not flags: they come from the config file or the environment.
func newRegistryCmd() *cobra.Command {
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
	reg.AddCommand(newRegistryPublishCmd(nil), newRegistryListCmd(nil), newRegistryShowCmd(nil), newRegistryPullCmd(nil),
		newRegistryPromoteCmd(nil), newRegistryDiffCmd(nil), newRegistrySyncCmd(nil), newRegistryServeCmd(nil),
		newRegistryGCCmd(nil))
	return reg
}

// registryIO is what every registry subcommand gets: its output and the registry section of
// the config with --store applied.
type registryIO struct {
	Out      io.Writer
	Registry config.RegistryConfig
}

// fill loads the config and applies --store.
func (o *registryIO) fill(cmd *cobra.Command) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	if store, _ := cmd.Flags().GetString("store"); store != "" {
		cfg.Registry.Store = store
	}
	o.Out, o.Registry = cmd.OutOrStdout(), cfg.Registry
	return nil
}

func (o *registryIO) open() (*registry.Registry, error) {
	return registry.Open(o.Registry, slog.Default())
}

// registryRunE fills opts' registryIO and calls runF under registry.deadline: the RunE of every
// registry subcommand but serve.
func registryRunE[O any](opts *O, rio *registryIO, args *[]string, runF func(context.Context, *O) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, a []string) error {
		if err := rio.fill(cmd); err != nil {
			return err
		}
		*args = a
		ctx, cancel := context.WithTimeoutCause(cmd.Context(), rio.Registry.Deadline,
			fmt.Errorf("registry command did not finish within registry.deadline %v", rio.Registry.Deadline))
		defer cancel()
		return runF(ctx, opts)
	}
}

type registryPublishOptions struct {
	registryIO
	Dir, Model string
}

func newRegistryPublishCmd(runF func(context.Context, *registryPublishOptions) error) *cobra.Command {
	if runF == nil {
		runF = runRegistryPublish
	}
	opts := &registryPublishOptions{}
	var args []string
	cmd := &cobra.Command{
		Use:     "publish CKPT_DIR --model NAME",
		Short:   "Publish a checkpoint directory as the next version of a model",
		Example: "  schedrl registry publish runs/defrag-ppo --model defrag --store s3://models/team",
		Args:    cobra.ExactArgs(1),
	}
	cmd.RunE = registryRunE(opts, &opts.registryIO, &args, func(ctx context.Context, o *registryPublishOptions) error {
		o.Dir = args[0]
		return runF(ctx, o)
	})
	cmd.Flags().StringVar(&opts.Model, "model", "", "model name (letters, digits, . _ -)")
	cmd.MarkFlagRequired("model")
	return cmd
}

func runRegistryPublish(ctx context.Context, opts *registryPublishOptions) error {
	r, err := opts.open()
	if err != nil {
		return err
	}
	v, err := r.Publish(ctx, opts.Model, opts.Dir)
	if err != nil {
		return err
	}
	state := "published"
	if v.Existing {
		state = "already published as"
	}
	fmt.Fprintf(opts.Out, "%s %s  %s\n", state, v.Ref(), v.URI)
	return nil
}

type registryListOptions struct {
	registryIO
	Models []string // empty: all
}

func newRegistryListCmd(runF func(context.Context, *registryListOptions) error) *cobra.Command {
	if runF == nil {
		runF = runRegistryList
	}
	opts := &registryListOptions{}
	cmd := &cobra.Command{
		Use:   "list [MODEL]",
		Short: "List versions: created, aliases, metrics, dataset and code revision",
		Args:  cobra.MaximumNArgs(1),
	}
	cmd.RunE = registryRunE(opts, &opts.registryIO, &opts.Models, runF)
	return cmd
}

func runRegistryList(ctx context.Context, opts *registryListOptions) error {
	r, err := opts.open()
	if err != nil {
		return err
	}
	models := opts.Models
	if len(models) == 0 {
		if models, err = r.Models(ctx); err != nil {
			return err
		}
	}
	w := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "VERSION\tCREATED\tALIASES\tMETRICS\tDATASET\tCONFIG\tCODE")
	for _, m := range models {
		versions, err := r.Versions(ctx, m)
		if err != nil {
			return err
		}
		for _, v := range versions {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Ref(), v.Manifest.Created.Format("2006-01-02 15:04"),
				dash(strings.Join(v.Aliases, ",")), dash(metricList(v.Manifest.Metrics)),
				dash(short(v.Manifest.DatasetHash)), dash(short(v.Manifest.ConfigHash)), dash(shortRevision(v.Manifest.CodeRevision)))
		}
	}
	return w.Flush()
}

// registryRefsOptions: subcommands that take version references as arguments.
type registryRefsOptions struct {
	registryIO
	Refs []string
}

func newRegistryShowCmd(runF func(context.Context, *registryRefsOptions) error) *cobra.Command {
	if runF == nil {
		runF = runRegistryShow
	}
	opts := &registryRefsOptions{}
	cmd := &cobra.Command{
		Use:   "show MODEL@VERSION|MODEL@ALIAS",
		Short: "Show one version: lineage, hyper-parameters, metrics and files",
		Args:  cobra.ExactArgs(1),
	}
	cmd.RunE = registryRunE(opts, &opts.registryIO, &opts.Refs, runF)
	return cmd
}

func runRegistryShow(ctx context.Context, opts *registryRefsOptions) error {
	r, err := opts.open()
	if err != nil {
		return err
	}
	v, err := r.Resolve(ctx, opts.Refs[0])
	if err != nil {
		return err
	}
	showVersion(opts.Out, v)
	return nil
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
	hyper := registry.FlattenHyper(m.Hyper)
	for _, k := range slices.Sorted(maps.Keys(hyper)) {
		fmt.Fprintf(w, "hyper.%s\t%s\n", k, hyper[k])
	}
	for _, k := range slices.Sorted(maps.Keys(m.Metrics)) {
		fmt.Fprintf(w, "metrics.%s\t%.6g\n", k, m.Metrics[k])
	}
	for _, f := range m.Files {
		fmt.Fprintf(w, "file %s\t%d bytes  sha256 %s\n", f.Path, f.Size, f.SHA256)
	}
	w.Flush()
}

type registryPullOptions struct {
	registryIO
	Ref, To string
	Force   bool
}

func newRegistryPullCmd(runF func(context.Context, *registryPullOptions) error) *cobra.Command {
	if runF == nil {
		runF = runRegistryPull
	}
	opts := &registryPullOptions{}
	var args []string
	cmd := &cobra.Command{
		Use:   "pull MODEL@VERSION|MODEL@ALIAS --to DIR",
		Short: "Download a version into DIR, verifying every file's sha256",
		Args:  cobra.ExactArgs(1),
	}
	cmd.RunE = registryRunE(opts, &opts.registryIO, &args, func(ctx context.Context, o *registryPullOptions) error {
		o.Ref = args[0]
		return runF(ctx, o)
	})
	cmd.Flags().StringVar(&opts.To, "to", "", "destination directory (must not exist unless --force)")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "replace an existing destination")
	markOutput(cmd.Flags(), "to", string(manifestkind.Checkpoint))
	cmd.MarkFlagRequired("to")
	return cmd
}

func runRegistryPull(ctx context.Context, opts *registryPullOptions) error {
	r, err := opts.open()
	if err != nil {
		return err
	}
	v, err := r.Pull(ctx, opts.Ref, opts.To, opts.Force)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "pulled %s to %s (%d files verified)\n", v.Ref(), opts.To, len(v.Manifest.Files))
	return nil
}

type registryPromoteOptions struct {
	registryIO
	Ref, Alias string
}

func newRegistryPromoteCmd(runF func(context.Context, *registryPromoteOptions) error) *cobra.Command {
	if runF == nil {
		runF = runRegistryPromote
	}
	opts := &registryPromoteOptions{}
	var args []string
	cmd := &cobra.Command{
		Use:   "promote MODEL@VERSION --alias NAME",
		Short: "Point an alias (e.g. champion) at a version, in the store and in MLflow",
		Args:  cobra.ExactArgs(1),
	}
	cmd.RunE = registryRunE(opts, &opts.registryIO, &args, func(ctx context.Context, o *registryPromoteOptions) error {
		o.Ref = args[0]
		return runF(ctx, o)
	})
	cmd.Flags().StringVar(&opts.Alias, "alias", "champion", "alias to set")
	return cmd
}

func runRegistryPromote(ctx context.Context, opts *registryPromoteOptions) error {
	r, err := opts.open()
	if err != nil {
		return err
	}
	v, err := r.Promote(ctx, opts.Ref, opts.Alias)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "%s@%s -> %s\n", v.Model, opts.Alias, v.Ref())
	return nil
}

func newRegistryDiffCmd(runF func(context.Context, *registryRefsOptions) error) *cobra.Command {
	if runF == nil {
		runF = runRegistryDiff
	}
	opts := &registryRefsOptions{}
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Configuration, lineage and metric differences between two versions",
		Args:  cobra.ExactArgs(2),
	}
	cmd.RunE = registryRunE(opts, &opts.registryIO, &opts.Refs, runF)
	return cmd
}

func runRegistryDiff(ctx context.Context, opts *registryRefsOptions) error {
	r, err := opts.open()
	if err != nil {
		return err
	}
	a, err := r.Resolve(ctx, opts.Refs[0])
	if err != nil {
		return err
	}
	b, err := r.Resolve(ctx, opts.Refs[1])
	if err != nil {
		return err
	}
	changes := registry.Diff(a, b)
	if len(changes) == 0 {
		fmt.Fprintf(opts.Out, "%s and %s do not differ\n", a.Ref(), b.Ref())
		return nil
	}
	w := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "FIELD\t%s\t%s\tDELTA\n", clip(a.Ref(), diffCell), clip(b.Ref(), diffCell))
	for _, c := range changes {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", clip(c.Field, diffField), clip(dash(c.A), diffCell), clip(dash(c.B), diffCell), c.Delta)
	}
	return w.Flush()
}

// A diff row fits in 160 columns: a field of at most 40, two values of at most 44 (a sha256
// or a code revision shows its head and tail), a delta of at most 16 ("%+.6g"), and the gaps.
const (
	diffField = 40
	diffCell  = 44
)

// clip shortens s to n runes by replacing its middle with "…", keeping both ends: two
// hashes or lists that differ still show where.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := (n - 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
}

func newRegistrySyncCmd(runF func(context.Context, *registryIO) error) *cobra.Command {
	if runF == nil {
		runF = runRegistrySync
	}
	opts := &registryIO{}
	var args []string
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Mirror to MLflow every version and alias it lacks (after MLflow was down)",
		Args:  cobra.NoArgs,
	}
	cmd.RunE = registryRunE(opts, opts, &args, runF)
	return cmd
}

func runRegistrySync(ctx context.Context, opts *registryIO) error {
	r, err := opts.open()
	if err != nil {
		return err
	}
	rep, err := r.Sync(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "%d models, %d versions newly mirrored\n", rep.Models, rep.Mirrored)
	return nil
}

type registryServeOptions struct {
	registryIO
	Addr string
}

func newRegistryServeCmd(runF func(context.Context, *registryServeOptions) error) *cobra.Command {
	if runF == nil {
		runF = runRegistryServe
	}
	opts := &registryServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8080]",
		Short: "Serve a web page listing models, versions, metrics, lineage and report plots",
		Long: "Serve a web page listing models, versions, metrics, lineage and report plots. The store must\n" +
			"exist and answer at start. A client gets 10 s for its request's headers and 30 s for the whole\n" +
			"request, the answer must be sent within 60 s, and an idle connection is closed after 120 s\n" +
			"(docs/deploy.md, \"Running it safely\").",
		Args: cobra.NoArgs,
	}
	// No deadline: a server runs until it is interrupted.
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := opts.fill(cmd); err != nil {
			return err
		}
		return runF(cmd.Context(), opts)
	}
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:8080", "listen address")
	return cmd
}

type registryGCOptions struct {
	registryIO
	OlderThan time.Duration
	DryRun    bool
}

func newRegistryGCCmd(runF func(context.Context, *registryGCOptions) error) *cobra.Command {
	if runF == nil {
		runF = runRegistryGC
	}
	opts := &registryGCOptions{}
	var args []string
	cmd := &cobra.Command{
		Use:   "gc [--dry-run] [--older-than 1h]",
		Short: "Remove what killed publishes left: unfinished versions' claims and objects, temporaries",
		Long: "A publish claims its version number first and writes the manifest last. One that was killed\n" +
			"leaves the claim, the files it uploaded and, in a file:// store, hidden temporaries. gc removes\n" +
			"those older than --older-than (a live publish's are younger), and the number is taken again.\n" +
			"Every publish does the same for its own model first.",
		Example: "  schedrl registry gc --dry-run",
		Args:    cobra.NoArgs,
	}
	cmd.RunE = registryRunE(opts, &opts.registryIO, &args, runF)
	cmd.Flags().DurationVar(&opts.OlderThan, "older-than", registry.StaleAge, "remove unfinished publishes claimed longer ago than this")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "list what would be removed, remove nothing")
	return cmd
}

func runRegistryGC(ctx context.Context, opts *registryGCOptions) error {
	if opts.OlderThan < 0 {
		return fmt.Errorf("--older-than: %v is negative", opts.OlderThan)
	}
	r, err := opts.open()
	if err != nil {
		return err
	}
	garbage, temps, err := r.GC(ctx, opts.OlderThan, opts.DryRun)
	verb := "removed"
	if opts.DryRun {
		verb = "would remove"
	}
	for _, g := range garbage {
		who := "no readable claim"
		if !g.Claimed.IsZero() {
			who = fmt.Sprintf("claimed %s by pid %d on %s", g.Claimed.Format(time.RFC3339), g.PID, g.Host)
		}
		fmt.Fprintf(opts.Out, "%s %s: unfinished publish, %d objects (%s)  %s\n", verb, g.Ref, g.Objects, who, g.URI)
	}
	for _, p := range temps {
		fmt.Fprintf(opts.Out, "%s temporary %s\n", verb, p)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "%d unfinished publishes, %d temporaries older than %v\n", len(garbage), len(temps), opts.OlderThan)
	return nil
}

func runRegistryServe(ctx context.Context, opts *registryServeOptions) error {
	r, err := opts.open()
	if err != nil {
		return err
	}
	return r.Serve(ctx, opts.Addr, nil)
}

func metricList(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%.4g", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func short(s string) string { return s[:min(len(s), 12)] }

// shortRevision is a code revision's first 12 characters, keeping a "-dirty" mark.
func shortRevision(s string) string {
	if base, dirty := strings.CutSuffix(s, "-dirty"); dirty {
		return short(base) + "-dirty"
	}
	return short(s)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
