package agent

import (
	"context"

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

// recordResults creates the result of each terminated attempt status shows
// that this process has not recorded yet. Creates are idempotent by name
// (an agent restart or a retry finds them AlreadyExists); a failure is
// logged and not retried, as results are best effort and must not hold
// the pod's status back.
func (a *Agent) recordResults(ctx context.Context, pod *corev1.Pod, st *podState, status *corev1.PodStatus) {
	if a.cfg.Results.Writer == nil {
		return
	}
	for _, at := range results.Terminated(status) {
		if st.recorded[at.Key()] {
			continue
		}
		if st.recorded == nil {
			st.recorded = map[string]bool{}
		}
		st.recorded[at.Key()] = true
		if err := a.createResult(ctx, pod, at); err != nil {
			a.log.Warn("record container result", "namespace", pod.Namespace, "name", pod.Name,
				"container", at.Container, "attempt", at.Number, "err", err.Error())
		}
	}
}

func (a *Agent) createResult(ctx context.Context, pod *corev1.Pod, at results.Attempt) error {
	tail, truncated := a.logTail(ctx, pod, at)
	return a.cfg.Results.Writer.Create(ctx, results.New(pod, at, tail, truncated))
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
