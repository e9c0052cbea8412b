package agent

import (
	"context"
	"time"
)

// shutdown terminates every running pod as the kubelet's node shutdown
// manager does: DisruptionTarget (TerminationByKubelet), phase Failed with
// reason Terminated, grace capped by ShutdownGracePeriod. It returns once
// their final statuses are written or the grace period (plus a margin) is
// over.
func (a *Agent) shutdown(ctx context.Context) {
	a.mu.Lock()
	a.shuttingDown = true
	keys := make([]string, 0, len(a.states))
	for k := range a.states {
		keys = append(keys, k)
	}
	a.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	a.log.Info("node shutting down: terminating pods", "pods", len(keys))
	for _, k := range keys {
		a.queue.Add(k)
	}
	deadline := time.Now().Add(a.cfg.ShutdownGracePeriod + 5*time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if a.allTerminated() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// allTerminated reports whether every pod's final status is written.
func (a *Agent) allTerminated() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, st := range a.states {
		if st.written == nil {
			return false
		}
		if p := st.written.Phase; p != "Succeeded" && p != "Failed" {
			return false
		}
	}
	return true
}
