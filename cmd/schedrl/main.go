// Command schedrl trains, evaluates and publishes scheduling policies for shared GPU clusters.
// Each subcommand lives in its own file, following cli/cli's pattern: newXCmd builds the cobra
// command and fills an options struct from the flags, runX(ctx, opts) does the work, and a
// test passes its own runF to check the parsed options without running anything.
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/spf13/cobra"
)

// newRootCmd lists the subcommands; a new one is one more entry here.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:               "schedrl",
		Short:             "Train scheduling policies for shared GPU clusters (offline BC, then PPO)",
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: checkFlags,
	}
	root.AddCommand(
		newSimCmd(nil),
		newDatasetsCmd(),
		newPretrainCmd(nil),
		newFinetuneCmd(nil),
		newEvalCmd(nil),
		newJobsCmd(nil),
		newMAIFSCmd(nil),
		newServeCmd(),
		newLogsCmd(),
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
	os.Exit(execute(newRootCmd(), os.Args[1:], os.Stderr))
}

// interruptGrace is how long a command has, after SIGINT or SIGTERM cancelled its context, to
// stop and clean up by itself before execute removes its temporaries and exits anyway.
const interruptGrace = 5 * time.Second

// interruption is the cancel cause of a command's context when a signal stopped it.
type interruption struct{ sig syscall.Signal }

func (i interruption) Error() string { return "interrupted (" + i.sig.String() + ")" }

// execute runs root with args and returns the exit status. Every command gets a context that
// SIGINT and SIGTERM cancel; an interrupted command exits 130 (SIGINT) or 143 (SIGTERM) after
// saying "interrupted" once, and leaves no temporary file behind (atomicfile.RemoveTemps),
// whether or not it noticed the cancellation within interruptGrace.
func execute(root *cobra.Command, args []string, stderr io.Writer) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan error, 1)
	root.SetArgs(args)
	go func() {
		// A panic is a bug, but the user still gets one line and a non-zero exit, not a
		// runtime trace: the process would die the same way, only less readably.
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("internal error (a bug; please report it with the command line): %v", r)
			}
		}()
		done <- root.ExecuteContext(ctx)
	}()
	var err error
	select {
	case err = <-done:
	case s := <-sigs:
		cancel(interruption{s.(syscall.Signal)})
		select {
		case err = <-done:
		case <-time.After(interruptGrace):
		case <-sigs: // a second signal: stop waiting
		}
	}
	if i, ok := context.Cause(ctx).(interruption); ok {
		atomicfile.RemoveTemps()
		fmt.Fprintln(stderr, "schedrl: interrupted")
		return 128 + int(i.sig)
	}
	if err != nil {
		fmt.Fprintln(stderr, "schedrl:", err)
		if hint := missingRepoFileHint(err, args); hint != "" {
			fmt.Fprintln(stderr, "schedrl:", hint)
		}
		return 1
	}
	return 0
}

var missingRepoFile = regexp.MustCompile(`open ((?:data|configs)/[^:\s]+): no such file or directory`)

// missingRepoFileHint names the keys to set when a command failed on a default repository
// file that neither the working folder nor the binary's checkout has; the command's own
// section's key first.
func missingRepoFileHint(err error, args []string) string {
	m := missingRepoFile.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	keys := config.DefaultKeys(m[1])
	if len(args) > 0 {
		own := strings.ReplaceAll(args[0], "-", "_") + "."
		slices.SortStableFunc(keys, func(a, b string) int {
			return cmp.Compare(boolRank(!strings.HasPrefix(a, own)), boolRank(!strings.HasPrefix(b, own)))
		})
	}
	if len(keys) == 0 {
		return fmt.Sprintf("%s is a repository file: run from the checkout (or with data/ and configs/ beside the binary), or name the file with its flag", m[1])
	}
	return fmt.Sprintf("%s is the default of %s, a repository file: run from the checkout (or with data/ and configs/ beside the binary), or pass --set %s=PATH",
		m[1], strings.Join(keys, ", "), keys[0])
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// loadConfig loads the effective config for a command: its --config file, SCHEDRL_ env
// variables and its flags, over the built-in defaults.
func loadConfig(cmd *cobra.Command) (config.Config, error) {
	path, _ := cmd.Flags().GetString(config.ConfigFlag)
	if !cmd.Flags().Changed(config.ConfigFlag) {
		path = config.RepoFile(path) // pipeline's configs/default.yaml, from another folder too
	}
	return config.Load(path, cmd.Flags())
}
