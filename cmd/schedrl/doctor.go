package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/reach"
	"github.com/schedrl/schedrl/nn"
)

type doctorOptions struct {
	Out     io.Writer
	Config  config.Config
	Strict  bool
	Timeout time.Duration // per service check
}

func newDoctorCmd(runF func(context.Context, *doctorOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDoctor
	}
	opts := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check libtorch, gotch, CUDA and the configured services",
		Long: "Loads libtorch and runs a tensor operation, reports its version and path, the gotch\n" +
			"version and link variant, CUDA devices, and whether each service the config names\n" +
			"answers. Fails when libtorch does not work (or, with --strict, a service is down).",
		Args: cobra.NoArgs,
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
	cmd.Flags().BoolVar(&opts.Strict, "strict", false, "fail when a configured service is unreachable")
	durationFlag(cmd.Flags(), &opts.Timeout, "timeout", 3*time.Second, "time allowed to each service check")
	return cmd
}

func runDoctor(ctx context.Context, opts *doctorOptions) error {
	cfg := opts.Config
	w := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "schedrl\t%s (%s)\n", version, buildRevision())
	rt, probeErr := nn.Probe()
	fmt.Fprintf(w, "libtorch\t%s\n", orMissing(rt.LibtorchVersion))
	fmt.Fprintf(w, "libtorch path\t%s\n", orMissing(rt.LibtorchPath))
	fmt.Fprintf(w, "gotch\t%s, %s variant\n", rt.GotchVersion, rt.Variant)
	fmt.Fprintf(w, "cpu threads\t%d\n", rt.Threads)
	fmt.Fprintf(w, "cuda\tavailable=%t devices=%d\n", rt.CUDAAvailable, rt.CUDADevices)
	dev := "none"
	if probeErr == nil {
		if d, err := nn.Device(cfg.Device); err != nil {
			dev = "error: " + err.Error()
		} else {
			dev = fmt.Sprintf("%s (device.name=%s)", deviceName(d.IsCuda(), d.Value), cfg.Device.Name)
		}
	}
	fmt.Fprintf(w, "device\t%s\n", dev)
	var down []error
	for _, e := range cfg.Endpoints() {
		cctx, cancel := context.WithTimeout(ctx, opts.Timeout)
		err := reach.Check(cctx, e.URL)
		cancel()
		status := "reachable"
		if err != nil {
			status = "UNREACHABLE: " + err.Error()
			down = append(down, fmt.Errorf("%s %s: %w", e.Name, e.URL, err))
		}
		fmt.Fprintf(w, "%s\t%s %s\n", e.Name, e.URL, status)
	}
	if len(cfg.Endpoints()) == 0 {
		fmt.Fprintf(w, "services\tnone configured\n")
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if probeErr != nil {
		return fmt.Errorf("libtorch does not work: %w", probeErr)
	}
	if opts.Strict && len(down) > 0 {
		return errors.Join(down...)
	}
	return nil
}

func orMissing(s string) string {
	if s == "" {
		return "(not found)"
	}
	return s
}

func deviceName(cuda bool, ordinal int) string {
	if cuda {
		return fmt.Sprintf("cuda:%d", ordinal)
	}
	return "cpu"
}
