package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	jobcontroller "github.com/batchlet/batchlet/controller/job"
	"github.com/batchlet/batchlet/controller/podgc"
	"github.com/batchlet/batchlet/results"
)

type resultsFlags struct {
	waitFlags
	logs   bool
	failed bool
	output string
}

func newResultsCommand() *cobra.Command {
	var f resultsFlags
	cmd := &cobra.Command{
		Use:   "results [job/|jobset/|pod/]NAME",
		Short: "Show the exit codes, reasons and log tails of a Job's terminated containers, even after its pods are gone",
		Long: `Results lists the ContainerResults (results.batchlet.dev/v1) of a Job
(NAME, job/NAME), a JobSet (jobset/NAME) or a pod (pod/NAME): one row per
terminated container attempt with its completion index, exit code, reason
and duration. The node agent records them as containers terminate; they
outlive the pods and the Job (pod GC, TTL, deletion) until the server's
--results-retention-age / --results-retention-max remove them.

  batchlet results pi
  batchlet results pi --failed --logs
  batchlet results jobset/train -n ml -o json`,
		Args: oneTarget,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := showResults(cmd.Context(), f, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr()); code != 0 {
				return exitError(code)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the server (default: KUBECONFIG, then the data dir's)")
	fl.StringVar(&f.server, "server", "", "URL of the server (overrides the kubeconfig's)")
	fl.StringVar(&f.dataDir, "data-dir", "", "data dir of a batchlet server whose kubeconfig to use (default ~/.batchlet)")
	fl.StringVarP(&f.namespace, "namespace", "n", "default", "namespace of the object")
	fl.BoolVar(&f.logs, "logs", false, "print each attempt's log tail")
	fl.BoolVar(&f.failed, "failed", false, "only attempts that exited non-zero")
	fl.StringVarP(&f.output, "output", "o", "", "output format: empty for a table, or json")
	return cmd
}

// addRetentionFlags declares the results retention flags of the server
// and of `batchlet controllers`.
func addRetentionFlags(fl *pflag.FlagSet, r *results.Retention) {
	fl.DurationVar(&r.MaxAge, "results-retention-age", 7*24*time.Hour, "delete ContainerResults older than this (negative: keep any age)")
	fl.IntVar(&r.MaxCount, "results-retention-max", 100_000, "keep at most this many ContainerResults, deleting the oldest first (negative: no bound)")
}

// addPodGCFlag adds kube-controller-manager's --terminated-pod-gc-threshold
// (<= 0 disables the threshold, as upstream).
func addPodGCFlag(fl *pflag.FlagSet, threshold *int) {
	fl.IntVar(threshold, "terminated-pod-gc-threshold", podgc.DefaultTerminatedPodThreshold,
		"terminated pods kept before the pod garbage collector deletes the oldest (<= 0: no limit); a smaller value bounds the memory of many short pods")
}

// addPodGCPolicyFlag adds --terminated-pod-gc-policy.
func addPodGCPolicyFlag(fl *pflag.FlagSet, policy *string, def string) {
	fl.StringVar(policy, "terminated-pod-gc-policy", def,
		"which terminated pods the pod garbage collector deletes: threshold (upstream's: the oldest beyond --terminated-pod-gc-threshold) or counted (also each pod its Job has counted and no longer reads, as soon as it is counted, keeping each Job's newest: memory then follows the live pods; see docs/scaling.md)")
}

// podGCThreshold maps the flag to the option, where 0 means the default.
func podGCThreshold(flag int) int {
	if flag <= 0 {
		return -1
	}
	return flag
}

// addJobBackoffFlags adds the Job controller's pod-failure backoff flags
// (upstream's 10s doubling up to 10m by default).
func addJobBackoffFlags(fl *pflag.FlagSet, initial, limit *time.Duration) {
	fl.DurationVar(initial, "job-pod-failure-backoff", jobcontroller.DefaultJobPodFailureBackOff,
		"delay before the job controller replaces a Job's failed pod; it doubles with each further failure (a Job's "+jobcontroller.PodFailureBackoffAnnotation+" annotation overrides it)")
	fl.DurationVar(limit, "job-pod-failure-backoff-max", jobcontroller.MaxJobPodFailureBackOff,
		"cap of the job controller's pod-failure backoff")
}

// validateJobBackoffFlags reports bad backoff flags before anything starts.
func validateJobBackoffFlags(initial, limit time.Duration) error {
	if err := jobcontroller.ValidatePodFailureBackoff(initial, limit); err != nil {
		return fmt.Errorf("--job-pod-failure-backoff / --job-pod-failure-backoff-max: %w", err)
	}
	return nil
}

// resultsSelector maps [TYPE/]NAME to the selectable field to list by.
func resultsSelector(arg string) (field, name string, err error) {
	typ, name, found := strings.Cut(arg, "/")
	if !found {
		typ, name = "job", arg
	}
	if name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q is not NAME, job/NAME, jobset/NAME or pod/NAME", arg)
	}
	switch strings.ToLower(typ) {
	case "job", "jobs", "job.batch", "jobs.batch":
		return results.FieldJobName, name, nil
	case "jobset", "jobsets", "jobset.jobset.x-k8s.io", "jobsets.jobset.x-k8s.io":
		return results.FieldJobSetName, name, nil
	case "pod", "pods", "po":
		return results.FieldPodName, name, nil
	}
	return "", "", fmt.Errorf("batchlet results shows Jobs, JobSets and pods, not %q", typ)
}

func showResults(ctx context.Context, f resultsFlags, arg string, stdout, stderr io.Writer) int {
	field, name, err := resultsSelector(arg)
	if err == nil && f.output != "" && f.output != "json" {
		err = fmt.Errorf("--output %q: want json or nothing", f.output)
	}
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return waitExitError
	}
	dyn, ok := f.dynamicClient(stderr)
	if !ok {
		return waitExitError
	}
	rs, err := results.List(ctx, dyn, f.namespace, field, name)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return waitExitError
	}
	if f.failed {
		rs = onlyFailed(rs)
	}
	if f.output == "json" {
		return writeResultsJSON(stdout, stderr, rs)
	}
	if len(rs) == 0 {
		fmt.Fprintf(stderr, "No results found for %s in %s namespace.\n", arg, f.namespace)
		return 0
	}
	writeResultsTable(stdout, rs, time.Now())
	if f.logs {
		writeResultLogs(stdout, rs)
	}
	return 0
}

func onlyFailed(rs []*results.ContainerResult) []*results.ContainerResult {
	var out []*results.ContainerResult
	for _, r := range rs {
		if r.Failed() {
			out = append(out, r)
		}
	}
	return out
}

func writeResultsJSON(stdout, stderr io.Writer, rs []*results.ContainerResult) int {
	items := make([]any, 0, len(rs))
	for _, r := range rs {
		u, err := results.ToUnstructured(r)
		if err != nil {
			fmt.Fprintln(stderr, "error:", err)
			return waitExitError
		}
		items = append(items, u.Object)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "    ")
	if err := enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return waitExitError
	}
	return 0
}

// writeResultsTable prints one row per attempt, as kubectl prints tables.
func writeResultsTable(w io.Writer, rs []*results.ContainerResult, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "JOB\tINDEX\tPOD\tCONTAINER\tATTEMPT\tEXIT\tREASON\tDURATION\tFINISHED")
	for _, r := range rs {
		s := &r.Spec
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", orNone(s.JobName), indexString(s.CompletionIndex), s.PodName,
			s.ContainerName, s.Attempt, s.ExitCode, orNone(s.Reason), resultDuration(s), finishedAgo(s, now))
	}
	_ = tw.Flush()
}

// writeResultLogs prints each attempt's log tail under a header.
func writeResultLogs(w io.Writer, rs []*results.ContainerResult) {
	for _, r := range rs {
		s := &r.Spec
		cut := ""
		if s.LogTruncated {
			cut = ", last part"
		}
		fmt.Fprintf(w, "\n==> pod/%s container %s attempt %d (exit %d%s) <==\n", s.PodName, s.ContainerName, s.Attempt, s.ExitCode, cut)
		tail := s.LogTail
		if tail != "" && !strings.HasSuffix(tail, "\n") {
			tail += "\n"
		}
		fmt.Fprint(w, tail)
	}
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func indexString(i *int32) string {
	if i == nil {
		return "<none>"
	}
	return strconv.Itoa(int(*i))
}

func resultDuration(s *results.ContainerResultSpec) string {
	if s.StartedAt.IsZero() || s.FinishedAt.IsZero() {
		return "<unknown>"
	}
	d := s.FinishedAt.Sub(s.StartedAt.Time)
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func finishedAgo(s *results.ContainerResultSpec, now time.Time) string {
	if s.FinishedAt.IsZero() {
		return "<unknown>"
	}
	return now.Sub(s.FinishedAt.Time).Round(time.Second).String() + " ago"
}
