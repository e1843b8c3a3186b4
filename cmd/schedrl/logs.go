package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/kube/podlog"
	"github.com/schedrl/schedrl/pipeline/stages"
)

// newLogsCmd groups the commands that bring a real cluster's history in as decision logs.
func newLogsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logs",
		Short: "Decision logs of a real cluster: import a Kubernetes cluster's history",
	}
	cmd.AddCommand(newLogsImportCmd(nil), newLogsExpertCmd())
	return cmd
}

// newLogsExpertCmd is what the pods of the pipeline's logs stage run on the kubernetes
// executor: one shard of the expert logs, stored by sha256 (docs/distributed.md).
func newLogsExpertCmd() *cobra.Command {
	var shard, part string
	cmd := &cobra.Command{
		Use:   "expert --shard I/N --part KEY",
		Short: "Write shard I/N of the pipeline's expert logs (finetune.env's family) to the registry store",
		Long: "Runs the expert of finetune.env's family on its units whose position modulo N is I (placement:\n" +
			"the pipeline.log_seeds seeds; defrag-online: the timelines; maifs: the runs), stores each log under\n" +
			"KEY/blobs/SHA256 and the shard's part under KEY: what a pod of the pipeline's logs stage runs with\n" +
			"pipeline.executor.kind kubernetes. The stage merges the parts.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			if shard == "" || part == "" {
				return errors.New("--shard and --part: both required")
			}
			sh, err := eval.ParseShard(shard)
			if err != nil {
				return fmt.Errorf("--shard: %w", err)
			}
			return storeShard(cmd.Context(), cmd.OutOrStdout(), cfg.Registry, sh, part, func(ctx context.Context) ([]byte, error) {
				return stages.ExpertLogsShard(ctx, cfg, sh, part, slog.Default())
			})
		},
	}
	config.AddFlags(cmd.Flags(), "")
	cmd.Flags().StringVar(&shard, "shard", "", "the shard I/N to make")
	cmd.Flags().StringVar(&part, "part", "", "the store key prefix of the part and the logs")
	return cmd
}

// logsImportOptions configure `schedrl logs import`.
type logsImportOptions struct {
	Kubeconfig string
	Dumps      []string
	Out        string
	Pods       string
	Nodes      string
	Coverage   float64
	Timeout    time.Duration
	Stdout     io.Writer
}

func newLogsImportCmd(runF func(context.Context, *logsImportOptions) error) *cobra.Command {
	if runF == nil {
		runF = runLogsImport
	}
	opts := &logsImportOptions{}
	cmd := &cobra.Command{
		Use:   "import (--kubeconfig FILE | --dump FILE...) --out LOG [--pods PODS.csv] [--nodes NODES.csv]",
		Short: "Write the decision log of what a Kubernetes cluster's scheduler did with its pods",
		Long: "Reads a cluster's Node and Pod objects, live through --kubeconfig or from dumps of\n" +
			"`kubectl get nodes,pods -o json` (several dumps of one cluster in the order they were taken),\n" +
			"and writes a version-2 decision log: creation -> arrive, PodScheduled time and nodeName -> bind,\n" +
			"containers' finish -> complete, deletion or absence from a later dump -> delete. GPU requests\n" +
			"follow docs/deploy.md; pods without alibabacloud.com/gpu-index get the tightest-fitting GPUs.\n" +
			"Pods whose history is incomplete are counted and listed. See docs/decision-log.md.\n\n" +
			"--pods and --nodes also write the history as an openb pod list and node list (the columns of\n" +
			"data/openb, times in whole seconds from the first event, one row per pod of the log with the\n" +
			"log's binds; pods still running or waiting at the end get its time as deletion_time): point\n" +
			"sim.pods and sim.nodes at them and fine-tuning and eval resample the cluster's own workload.",
		Example: "  kubectl get nodes,pods -A -o json > monday.json\n" +
			"  schedrl logs import --dump monday.json --dump tuesday.json --out runs/cluster.jsonl\n" +
			"  schedrl logs import --kubeconfig ~/.kube/config --out runs/cluster.jsonl\n" +
			"  schedrl logs import --dump monday.json --out runs/cluster.jsonl --pods cluster-pods.csv --nodes cluster-nodes.csv\n" +
			"  schedrl sim --set sim.pods=cluster-pods.csv --set sim.nodes=cluster-nodes.csv",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Stdout = cmd.OutOrStdout()
			return runF(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", "read the cluster live through this kubeconfig")
	f.StringArrayVar(&opts.Dumps, "dump", nil, "a `kubectl get nodes,pods -o json` dump (repeat, oldest first)")
	f.StringVar(&opts.Out, "out", "", "decision log to write (required)")
	f.StringVar(&opts.Pods, "pods", "", "also write the history as an openb pod list (CSV)")
	f.StringVar(&opts.Nodes, "nodes", "", "also write the cluster's nodes as an openb node list (CSV)")
	for _, name := range []string{"out", "pods", "nodes"} {
		markOutput(f, name, fileOutput)
	}
	f.Float64Var(&opts.Coverage, "coverage", 0.95, "share of the imported requests the header's typical shapes cover")
	f.DurationVar(&opts.Timeout, "api-timeout", 30*time.Second, "deadline of each API server request (--kubeconfig)")
	return cmd
}

func runLogsImport(ctx context.Context, opts *logsImportOptions) error {
	switch {
	case opts.Out == "":
		return errors.New("--out: required")
	case (opts.Kubeconfig == "") == (len(opts.Dumps) == 0):
		return errors.New("give --kubeconfig FILE or --dump FILE (one or more), not both")
	}
	outs := map[string]string{}
	for _, o := range []struct{ flag, path string }{{"--out", opts.Out}, {"--pods", opts.Pods}, {"--nodes", opts.Nodes}} {
		if o.path == "" {
			continue
		}
		abs, err := filepath.Abs(o.path)
		if err != nil {
			return fmt.Errorf("%s %s: %w", o.flag, o.path, err)
		}
		if prev, dup := outs[abs]; dup {
			return fmt.Errorf("%s %s: the same file as %s", o.flag, o.path, prev)
		}
		outs[abs] = o.flag
	}
	var snaps []podlog.Snapshot
	if opts.Kubeconfig != "" {
		client, err := kubeFlags{Kubeconfig: opts.Kubeconfig, QPS: 50, Burst: 100, APITimeout: opts.Timeout}.client()
		if err != nil {
			return fmt.Errorf("--kubeconfig %s: %w", opts.Kubeconfig, err)
		}
		s, err := podlog.ListLive(ctx, client, opts.Kubeconfig, opts.Timeout)
		if err != nil {
			return err
		}
		snaps = append(snaps, s)
	}
	for _, path := range opts.Dumps {
		s, err := podlog.ReadDump(path)
		if err != nil {
			return fmt.Errorf("--dump %w", err)
		}
		snaps = append(snaps, s)
	}
	// Every output is written under a temporary name and renamed only once the import has
	// succeeded: a failed import leaves none of them.
	var files []*atomicfile.File
	defer func() {
		for _, f := range files {
			f.Abort()
		}
	}()
	create := func(path string) (*atomicfile.File, error) {
		f, err := atomicfile.Create(path, 0o644)
		if err == nil {
			files = append(files, f)
		}
		return f, err
	}
	f, err := create(opts.Out)
	if err != nil {
		return err
	}
	iopts := podlog.ImportOptions{Coverage: opts.Coverage}
	for _, o := range []struct {
		path string
		w    *io.Writer
	}{{opts.Pods, &iopts.PodList}, {opts.Nodes, &iopts.NodeList}} {
		if o.path == "" {
			continue
		}
		lf, err := create(o.path)
		if err != nil {
			return err
		}
		*o.w = lf
	}
	rep, err := podlog.Import(snaps, f, iopts)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := f.Commit(); err != nil {
			return err
		}
	}
	fmt.Fprintf(opts.Stdout, "%s: %d nodes, %d pods: %d bound (%d with GPUs assigned by the tightest-fit rule), %d completed, %d deleted, %d waiting\n",
		opts.Out, rep.Nodes, rep.Pods, rep.Binds, rep.GPUIndexAssigned, rep.Completes, rep.Deletes, rep.Waiting)
	for _, gap := range []struct {
		what string
		pods []string
	}{
		{"bound without a PodScheduled time (bound at their creation)", rep.NoScheduledTime},
		{"gone from a later dump (deleted at the earlier dump's latest time)", rep.DeletedBetweenDumps},
		{"finished without a container finish time (at their dump's latest time)", rep.NoFinishTime},
		{"bound where the model refuses them (left waiting)", rep.Refused},
	} {
		if len(gap.pods) > 0 {
			fmt.Fprintf(opts.Stdout, "incomplete history: %d pods %s: %s\n", len(gap.pods), gap.what, abbreviate(gap.pods, 5))
		}
	}
	if iopts.PodList != nil || iopts.NodeList != nil {
		o := rep.Openb
		fmt.Fprintf(opts.Stdout, "openb lists: %s%s%d pods, %d nodes, %d s of history; %d pods still running and %d waiting at its end have deletion_time %d\n",
			labelled("pods", opts.Pods), labelled("nodes", opts.Nodes), o.Pods, o.Nodes, o.Span, o.Running, o.Waiting, o.Span)
	}
	return nil
}

// labelled is "what PATH, " for a path given, else "".
func labelled(what, path string) string {
	if path == "" {
		return ""
	}
	return what + " " + path + ", "
}

// abbreviate lists the first n names and how many more.
func abbreviate(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, ... (%d more)", strings.Join(names[:n], ", "), len(names)-n)
}
