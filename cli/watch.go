package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/batchlet/batchlet/cli/runner"
)

type watchFlags struct {
	waitFlags
	output string
	quiet  bool
}

func newWatchCommand() *cobra.Command {
	var f watchFlags
	cmd := &cobra.Command{
		Use:   "watch [job/|jobset/]NAME",
		Short: "Show a running Job or JobSet live until it finishes, exiting as batchlet wait",
		Long: `Watch follows a Job (NAME, job/NAME) or JobSet (jobset/NAME) on a running
server with the view of batchlet run: a progress bar with rate and ETA, the
index grid, active and failed counts, the last lines of failing indexes and
the pods' logs (--output as for batchlet run), then prints the summary and
exits as batchlet wait does:

  0    the Job is Complete (JobSet: Completed)
  1    it Failed
  2    it could not be watched (no such object, deleted while watching,
       bad argument, server unreachable)
  124  --timeout passed first
  130  interrupted (nothing is deleted)

The server is the one of --kubeconfig, else KUBECONFIG, else the kubeconfig
of --data-dir (default ~/.batchlet).

  batchlet watch pi
  batchlet watch jobset/train -n ml --quiet`,
		Args: oneTarget,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := watchJob(cmd.Context(), f, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr()); code != 0 {
				return exitError(code)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	f.addFlags(fl)
	fl.StringVarP(&f.output, "output", "o", outputAuto, "output: auto (live view on a terminal, else plain), tui, plain or json")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "do not stream pod logs")
	return cmd
}

func watchJob(parent context.Context, f watchFlags, arg string, stdout, stderr io.Writer) int {
	target, err := parseWaitTarget(arg)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return waitExitError
	}
	mode, err := outputMode(f.output, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return waitExitError
	}
	routeKlog(newLogger(os.Getenv("BATCHLET_LOG"), stderr))
	cfg, err := clientConfig(f.kubeconfig, f.server, f.dataDir)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return waitExitError
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	opts := runner.Options{Config: cfg, Namespace: f.namespace, Stdout: stdout, Stderr: stderr, Quiet: f.quiet, Now: time.Now}
	var res *runner.Result
	var followErr error
	if err := withReporter(mode, stdout, stderr, func(rep runner.Reporter) {
		opts.Reporter = rep
		res, followErr = runner.Follow(ctx, opts, target.resource, target.name)
	}); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return waitExitError
	}
	if followErr != nil {
		fmt.Fprintln(stderr, "error:", followErr)
		return waitExitError
	}
	return watchExitCode(parent, ctx, f, target, mode, stdout, stderr, res)
}

// watchExitCode reports how the watch ended and maps it to batchlet wait's
// exit codes.
func watchExitCode(parent, ctx context.Context, f watchFlags, target waitTarget, mode string, stdout, stderr io.Writer, res *runner.Result) int {
	if res.ExitCode == runner.ExitInterrupted {
		if parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			fmt.Fprintf(stderr, "error: timed out after %s waiting for %s/%s to finish\n", f.timeout, strings.ToLower(target.kind), target.name)
			return waitExitTimeout
		}
		return runner.ExitInterrupted
	}
	if err := writeResult(mode, stdout, stderr, res); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return waitExitError
	}
	for _, it := range res.Items {
		if it.Outcome == runner.OutcomeDeleted {
			return waitExitError
		}
	}
	return res.ExitCode
}
