package agent

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/batchlet/batchlet/results"
	"github.com/batchlet/batchlet/runtime"
)

// ResultsConfig makes the agent keep a ContainerResult of every container
// attempt that terminates (see package results).
type ResultsConfig struct {
	// Writer writes the results (results.NewWriter); nil keeps none.
	Writer results.Writer
	// LogTailBytes of each attempt's log are kept; default
	// results.DefaultLogTailBytes, negative keeps no log.
	LogTailBytes int
}

// pendingResult is a result to create and the attempt it records.
type pendingResult struct {
	key    string // results.Attempt.Key
	result *results.ContainerResult
}

// newResults builds the result of each terminated attempt status shows
// that this process has not recorded yet, reading the log tails from the
// runtime first, so that the creates need nothing more and can go beside
// the status patch.
func (a *Agent) newResults(ctx context.Context, pod *corev1.Pod, st *podState, status *corev1.PodStatus) []pendingResult {
	if a.cfg.Results.Writer == nil {
		return nil
	}
	var out []pendingResult
	for _, at := range results.Terminated(status) {
		if st.recorded[at.Key()] {
			continue
		}
		tail, truncated := a.logTail(ctx, pod, at)
		out = append(out, pendingResult{key: at.Key(), result: results.New(pod, at, tail, truncated)})
	}
	return out
}

// startResults creates rs in the background, so that they and the status
// that shows their attempts are written in the same commit window instead
// of one after the other. The function it returns waits for the creates
// and answers the keys of those that failed; a failure is logged. Creates
// are idempotent by name (an agent restart or a retry finds them
// AlreadyExists).
func (a *Agent) startResults(ctx context.Context, rs []pendingResult) func() []string {
	if len(rs) == 0 {
		return func() []string { return nil }
	}
	done := make(chan []string, 1)
	go func() {
		var failed []string
		for _, r := range rs {
			if err := a.cfg.Results.Writer.Create(ctx, r.result); err != nil {
				failed = append(failed, r.key)
				s := &r.result.Spec
				a.log.Warn("record container result", "namespace", r.result.Namespace, "name", s.PodName,
					"container", s.ContainerName, "attempt", s.Attempt, "err", err.Error())
			}
		}
		done <- failed
	}()
	return func() []string { return <-done }
}

// markRecorded notes the results of rs as written, but for those in failed
// when the status did not go out either (statusErr): the status write is
// retried, and these with it. A result that failed beside a written status
// is not retried, as results are best effort and must not hold the pod's
// status back.
func markRecorded(st *podState, rs []pendingResult, failed []string, statusErr error) {
	for _, r := range rs {
		if statusErr != nil && slices.Contains(failed, r.key) {
			continue
		}
		if st.recorded == nil {
			st.recorded = map[string]bool{}
		}
		st.recorded[r.key] = true
	}
}

// logTail reads the end of the attempt's log from the runtime; a log that
// cannot be read leaves the tail empty.
func (a *Agent) logTail(ctx context.Context, pod *corev1.Pod, at results.Attempt) (string, bool) {
	limit := a.cfg.Results.LogTailBytes
	if limit < 0 {
		return "", false
	}
	buf := &results.TailBuffer{Max: limit}
	if err := a.cfg.Runtime.Logs(ctx, pod.UID, at.Container, runtime.LogOptions{Previous: at.Previous}, buf); err != nil {
		a.log.Debug("read log for container result", "namespace", pod.Namespace, "name", pod.Name, "container", at.Container, "err", err.Error())
	}
	return buf.Tail()
}
