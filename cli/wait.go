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
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/batchlet/batchlet/cli/runner"
)

// Exit codes of `batchlet wait` besides runner's complete (0), failed (1)
// and interrupted (130).
const (
	// waitExitError: the wait could not start or went wrong (bad argument,
	// no such object, object deleted, API unreachable).
	waitExitError = 2
	// waitExitTimeout: --timeout passed before the object finished, as
	// timeout(1) reports it.
	waitExitTimeout = 124
)

type waitFlags struct {
	kubeconfig string
	server     string
	dataDir    string
	namespace  string
	timeout    time.Duration
}

func newWaitCommand() *cobra.Command {
	var f waitFlags
	cmd := &cobra.Command{
		Use:   "wait [job/|jobset/]NAME",
		Short: "Wait for a Job or JobSet to finish and exit with its result",
		Long: `Wait watches a Job (NAME, job/NAME) or JobSet (jobset/NAME) on a running
server until it has finished, prints its final condition with reason and
message, and exits with:

  0    the Job is Complete (JobSet: Completed)
  1    it Failed
  2    it could not be waited for (no such object, deleted while waiting,
       bad argument, server unreachable)
  124  --timeout passed first
  130  interrupted

The server is the one of --kubeconfig, else KUBECONFIG, else the kubeconfig
of --data-dir (default ~/.batchlet), as for batchlet run --server.

  batchlet wait pi
  batchlet wait jobset/train --timeout 10m -n ml`,
		Args: oneTarget,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := waitFor(cmd.Context(), f, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr()); code != 0 {
				return exitError(code)
			}
			return nil
		},
	}
	f.addFlags(cmd.Flags())
	return cmd
}

// oneTarget takes exactly one [TYPE/]NAME; a usage error exits 2, not 1,
// which says the Job failed.
func oneTarget(cmd *cobra.Command, args []string) error {
	if err := cobra.ExactArgs(1)(cmd, args); err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), "error:", err)
		return exitError(waitExitError)
	}
	return nil
}

// addFlags declares the flags that find the server and bound the wait,
// shared by wait and watch.
func (f *waitFlags) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the server (default: KUBECONFIG, then the data dir's)")
	fl.StringVar(&f.server, "server", "", "URL of the server (overrides the kubeconfig's)")
	fl.StringVar(&f.dataDir, "data-dir", "", "data dir of a batchlet server whose kubeconfig to use (default ~/.batchlet)")
	fl.StringVarP(&f.namespace, "namespace", "n", "default", "namespace of the object")
	fl.DurationVar(&f.timeout, "timeout", 0, "give up (exit 124) after this long; 0 waits forever")
}

// waitTarget is the object `batchlet wait` follows.
type waitTarget struct {
	resource schema.GroupVersionResource
	kind     string
	name     string
}

var (
	jobsResource    = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	jobSetsResource = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
)

// parseWaitTarget reads NAME (a Job) or TYPE/NAME, TYPE as kubectl spells
// Jobs and JobSets: job, jobs, job.batch, jobset, jobsets,
// jobset.jobset.x-k8s.io.
func parseWaitTarget(arg string) (waitTarget, error) {
	typ, name, found := strings.Cut(arg, "/")
	if !found {
		typ, name = "job", arg
	}
	if name == "" || strings.Contains(name, "/") {
		return waitTarget{}, fmt.Errorf("%q is not NAME, job/NAME or jobset/NAME", arg)
	}
	switch strings.ToLower(typ) {
	case "job", "jobs", "job.batch", "jobs.batch":
		return waitTarget{resource: jobsResource, kind: runner.JobGVK.Kind, name: name}, nil
	case "jobset", "jobsets", "jobset.jobset.x-k8s.io", "jobsets.jobset.x-k8s.io":
		return waitTarget{resource: jobSetsResource, kind: runner.JobSetGVK.Kind, name: name}, nil
	}
	return waitTarget{}, fmt.Errorf("batchlet wait follows Jobs and JobSets, not %q", typ)
}

// finishedExitCode decides from an object's status whether the wait is over
// and with which exit code.
func finishedExitCode(it runner.ItemResult) (int, bool) {
	switch it.Outcome {
	case runner.OutcomeComplete:
		return runner.ExitComplete, true
	case runner.OutcomeFailed:
		return runner.ExitFailed, true
	}
	return 0, false
}

// dynamicClient reaches the server the flags name, routing client-go's
// logs through BATCHLET_LOG; on failure it says why on stderr.
func (f *waitFlags) dynamicClient(stderr io.Writer) (dynamic.Interface, bool) {
	routeKlog(newLogger(os.Getenv("BATCHLET_LOG"), stderr))
	cfg, err := clientConfig(f.kubeconfig, f.server, f.dataDir)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return nil, false
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "error: build client:", err)
		return nil, false
	}
	return dyn, true
}

// errDeletedWhileWaiting ends a wait whose object went away unfinished.
var errDeletedWhileWaiting = errors.New("deleted before it finished")

func waitFor(parent context.Context, f waitFlags, arg string, stdout, stderr io.Writer) int {
	target, err := parseWaitTarget(arg)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return waitExitError
	}
	dyn, ok := f.dynamicClient(stderr)
	if !ok {
		return waitExitError
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	it, err := watchUntilFinished(ctx, dyn.Resource(target.resource).Namespace(f.namespace), target, f.namespace)
	switch {
	case err == nil:
		fmt.Fprintln(stdout, runner.Headline(it))
		code, _ := finishedExitCode(it)
		return code
	case parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		fmt.Fprintf(stderr, "error: timed out after %s waiting for %s/%s to finish\n", f.timeout, strings.ToLower(target.kind), target.name)
		return waitExitTimeout
	case ctx.Err() != nil:
		return runner.ExitInterrupted
	}
	fmt.Fprintln(stderr, "error:", err)
	return waitExitError
}

// watchUntilFinished lists and watches the one object until it has a true
// terminal condition.
func watchUntilFinished(ctx context.Context, ri dynamic.ResourceInterface, target waitTarget, namespace string) (runner.ItemResult, error) {
	sel := fields.OneTermEqualSelector("metadata.name", target.name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = sel
			return ri.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = sel
			return ri.Watch(ctx, opts)
		},
	}
	notFound := func(store cache.Store) (bool, error) {
		if _, exists, err := store.GetByKey(namespace + "/" + target.name); err != nil || !exists {
			return true, apierrors.NewNotFound(target.resource.GroupResource(), target.name)
		}
		return false, nil
	}
	var result runner.ItemResult
	_, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, notFound, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("%s/%s %w", strings.ToLower(target.kind), target.name, errDeletedWhileWaiting)
		}
		obj, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		result = runner.Evaluate(obj)
		_, done := finishedExitCode(result)
		return done, nil
	})
	return result, err
}
