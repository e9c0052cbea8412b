package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/batchlet/batchlet/cli/runner"
	"github.com/batchlet/batchlet/cli/runview"
	"github.com/batchlet/batchlet/controlplane"
)

type runFlags struct {
	server     string
	kubeconfig string
	dataDir    string
	keep       bool
	quiet      bool
	timeout    time.Duration
	output     string
	namespace  string
	runtime    string
	mirrors    []string
	queueFile  string
}

func newRunCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run FILE|-",
		Short: "Run a Job or JobSet manifest to completion and exit with its result",
		Long: `Run submits a manifest (YAML or JSON; Jobs, JobSets, bare Pods and the
ConfigMaps, Secrets, Services and Namespaces they use), streams pod logs,
shows progress, prints a summary and exits:

  0    every Job/JobSet completed (a Pod: Succeeded)
  1    one failed, or --timeout passed
  2    the input was refused: unknown or duplicate fields (as kubectl's
       --validate=strict), invalid objects, names that exist. The whole
       manifest is dry-run on the server first: nothing is created.
  130  interrupted (what was created is deleted)

Output (--output): auto (the default) shows a live view when stdout is a
terminal and plain lines otherwise; tui always shows the live view: a
progress bar with rate and ETA, the index grid, active and failed counts
and the last lines of failing indexes, pod logs scrolling above it; plain
prints pod logs to stdout and a progress line whenever the counters change
to stderr; json prints one JSON object per line: log lines and at the end
the result on stdout, created objects, messages and status changes on
stderr (schema in README.md).

Without --server or --kubeconfig it starts an embedded control plane on a
private temporary data dir and tears it down at the end. Against a server
(and with --data-dir) it deletes what it created, pods included, when the
run ends, so the same manifest can run again; --keep keeps it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := runManifest(cmd.Context(), f, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if code != 0 {
				return exitError(code)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.server, "server", "", "URL of a running batchlet server (uses its kubeconfig from --data-dir or KUBECONFIG)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "submit to the cluster of this kubeconfig instead of an embedded control plane")
	fl.StringVar(&f.dataDir, "data-dir", "", "data dir of the embedded control plane (default: a temporary dir, removed at the end unless --keep)")
	fl.BoolVar(&f.keep, "keep", false, "keep the created objects (and the embedded control plane's data dir) after the run")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "do not stream pod logs")
	fl.DurationVar(&f.timeout, "timeout", 0, "give up (exit 1) after this long; 0 waits forever")
	fl.StringVarP(&f.output, "output", "o", outputAuto, "output: auto (live view on a terminal, else plain), tui, plain or json")
	fl.StringVarP(&f.namespace, "namespace", "n", "default", "namespace for objects that name none")
	fl.StringVar(&f.runtime, "runtime", "process", "pod runtime of the embedded agent: process, image (containers run from their images) or sim")
	fl.StringVar(&f.queueFile, "queue-file", "", "give the manifest's Jobs a built-in work queue of this file's lines (a ConfigMap JOB-queue and the batchlet.dev/work-queue annotation; see docs/workqueue.md)")
	fl.StringSliceVar(&f.mirrors, "registry-mirror", nil, "pull REGISTRY's images from MIRROR instead (REGISTRY=MIRROR; repeatable)")
	return cmd
}

// exitError carries a process exit code without an error message.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit code %d", int(e)) }
func (e exitError) ExitCode() int { return int(e) }

func runManifest(parent context.Context, f runFlags, file string, stdout, stderr io.Writer) (int, error) {
	mode, err := outputMode(f.output, stdout)
	if err != nil {
		return runner.ExitInvalid, err
	}
	objs, source, err := readManifest(file)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return runner.ExitInvalid, nil
	}
	if f.queueFile != "" {
		if objs, err = withQueueFile(objs, f.queueFile); err != nil {
			fmt.Fprintln(stderr, "error:", err)
			return runner.ExitInvalid, nil
		}
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first Ctrl-C the run cleans up; a second one should
		// kill the process at once, as the default signal handling does.
		<-ctx.Done()
		stop()
	}()
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	// client-go's own logs (informers ending with the run) are internal:
	// shown only when BATCHLET_LOG asks for logs.
	routeKlog(newLogger(os.Getenv("BATCHLET_LOG"), stderr))
	cfg, shutdown, ephemeral, err := runTarget(ctx, f, stderr)
	if err != nil {
		return 1, err
	}
	defer shutdown()
	opts := runner.Options{
		Config: cfg, Namespace: f.namespace, Source: source,
		Stdout: stdout, Stderr: stderr, Quiet: f.quiet,
		// A temporary control plane goes with everything in it.
		Remove: !f.keep && !ephemeral,
	}
	var res *runner.Result
	var runErr error
	if err := withReporter(mode, stdout, stderr, func(rep runner.Reporter) {
		opts.Reporter = rep
		res, runErr = runner.Run(ctx, opts, objs)
	}); err != nil {
		return 1, err
	}
	if runErr != nil {
		return 1, runErr
	}
	say := func(text string) { fmt.Fprintln(stderr, text) }
	if mode == outputJSON {
		say = runview.NewJSONReporter(stdout, stderr, nil).Message
	}
	if res.ExitCode == runner.ExitInterrupted && ctx.Err() == context.DeadlineExceeded && parent.Err() == nil {
		res.ExitCode = runner.ExitFailed // --timeout, not Ctrl-C
		say(fmt.Sprintf("timed out after %s", f.timeout))
	} else if res.ExitCode == runner.ExitInterrupted {
		say("interrupted")
	}
	if res.ExitCode != runner.ExitInvalid {
		if err := writeResult(mode, stdout, stderr, res); err != nil {
			return 1, err
		}
	}
	return res.ExitCode, nil
}

func readManifest(file string) ([]*unstructured.Unstructured, string, error) {
	var r io.Reader
	source := file
	if file == "-" {
		r, source = os.Stdin, "STDIN"
	} else {
		fh, err := os.Open(file)
		if err != nil {
			return nil, "", fmt.Errorf("the path %q does not exist", file)
		}
		defer fh.Close()
		r = fh
	}
	objs, err := runner.ParseManifest(r)
	if err != nil {
		return nil, "", fmt.Errorf("error parsing %s: %w", source, err)
	}
	return objs, source, nil
}

// runTarget returns the client config to submit to: an existing cluster
// (--server/--kubeconfig) or a fresh embedded control plane, which is
// ephemeral when its data dir is a temporary one removed at the end.
func runTarget(ctx context.Context, f runFlags, stderr io.Writer) (*rest.Config, func(), bool, error) {
	if f.kubeconfig != "" || f.server != "" {
		cfg, err := clientConfig(f.kubeconfig, f.server, f.dataDir)
		return cfg, func() {}, false, err
	}
	dataDir := f.dataDir
	temp := false
	if dataDir == "" {
		d, err := os.MkdirTemp("", "batchlet-run-")
		if err != nil {
			return nil, nil, false, fmt.Errorf("create temporary data dir: %w", err)
		}
		dataDir, temp = d, true
	}
	logger := newLogger(os.Getenv("BATCHLET_LOG"), stderr)
	cp, err := controlplane.Start(ctx, controlplane.Options{
		DataDir: dataDir, Port: 0, Runtime: f.runtime, RegistryMirrors: f.mirrors, Ephemeral: temp && !f.keep, Logger: logger,
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("start embedded control plane: %w", err)
	}
	shutdown := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cp.Shutdown(sctx)
		if f.keep {
			fmt.Fprintf(stderr, "kept data dir %s; the control plane has stopped, restart it with:\n  batchlet server --data-dir %s\n  export KUBECONFIG=%s\n", dataDir, dataDir, filepath.Join(dataDir, "kubeconfig"))
		} else if temp {
			_ = os.RemoveAll(dataDir)
			controlplane.RemovePodsMemory(dataDir)
		}
	}
	return cp.ClientConfig(), shutdown, temp && !f.keep, nil
}

// clientConfig loads the kubeconfig of a running server: the one given, or
// KUBECONFIG's, or the data dir's (the default data dir's when none is
// given); server overrides its address.
func clientConfig(kubeconfig, server, dataDir string) (*rest.Config, error) {
	path := kubeconfig
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path == "" && dataDir != "" {
		path = controlplane.KubeconfigPath(dataDir)
	}
	if path == "" {
		path = controlplane.KubeconfigPath(controlplane.DefaultDataDir())
	}
	loading := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	overrides := &clientcmd.ConfigOverrides{}
	if server != "" {
		overrides.ClusterInfo.Server = server
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}
