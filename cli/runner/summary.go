package runner

import (
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// WriteSummary prints the final state of every followed object.
func WriteSummary(w io.Writer, res *Result) {
	for _, it := range res.Items {
		fmt.Fprintln(w, Headline(it))
		fmt.Fprintf(w, "  succeeded %d, failed %d, active %d", it.Counts.Succeeded, it.Counts.Failed, it.Counts.Active)
		if it.Restarts > 0 {
			fmt.Fprintf(w, ", restarts %d", it.Restarts)
		}
		if it.Duration > 0 {
			fmt.Fprintf(w, ", duration %s", it.Duration)
		}
		fmt.Fprintln(w)
		if it.CompletedIndexes != "" || it.FailedIndexes != "" {
			fmt.Fprintf(w, "  completed indexes %q, failed indexes %q\n", it.CompletedIndexes, it.FailedIndexes)
		}
		for _, c := range it.Conditions {
			fmt.Fprintf(w, "  condition %s=%s %s %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		for _, p := range it.FailedPods {
			fmt.Fprintf(w, "  %s\n", describePodExit(p))
			for _, line := range p.LastLogLines {
				fmt.Fprintf(w, "    | %s\n", line)
			}
		}
	}
	fmt.Fprintf(w, "elapsed %s, exit code %d\n", res.Elapsed.Round(time.Millisecond), res.ExitCode)
}

// Headline renders where an item ended with the reason and message of its
// final condition, e.g. "job/pi Failed (BackoffLimitExceeded): Job has
// reached the specified backoff limit".
func Headline(it ItemResult) string {
	head := fmt.Sprintf("%s/%s %s", strings.ToLower(it.Kind), it.Name, outcomeWord(it))
	if it.Outcome == OutcomeRunning {
		head = fmt.Sprintf("%s/%s did not finish", strings.ToLower(it.Kind), it.Name)
	}
	if it.Reason != "" {
		head += fmt.Sprintf(" (%s)", it.Reason)
	}
	if it.Message != "" {
		head += ": " + it.Message
	}
	return head
}

// describePodExit renders e.g. "pod pi-x container pi exited 128
// StartError: failed to start container process: ...", or for a pod that
// failed as a whole "pod pi-x failed DeadlineExceeded: ...".
func describePodExit(p PodExit) string {
	s := fmt.Sprintf("pod %s failed", p.Pod)
	if p.Container != "" {
		s = fmt.Sprintf("pod %s container %s exited %d", p.Pod, p.Container, p.ExitCode)
	}
	if p.Reason != "" {
		s += " " + p.Reason
	}
	if msg := strings.TrimSpace(p.Message); msg != "" {
		s += ": " + strings.ReplaceAll(msg, "\n", "\n    ")
	}
	return s
}

// outcomeWord names the outcome with the kind's own condition type: a Job is
// Complete, a JobSet Completed.
func outcomeWord(it ItemResult) string {
	if it.Kind == PodGVK.Kind && it.Outcome == OutcomeComplete {
		return string(corev1.PodSucceeded) // a Pod's phase, it has no Complete condition
	}
	if it.Outcome == OutcomeComplete {
		complete, _ := terminalTypes(it.Kind)
		return complete
	}
	return string(it.Outcome)
}
