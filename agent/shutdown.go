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
//
// With Config.KeepPodsOnShutdown nothing is terminated: the pods run on
// (their runtime's shims outlive the agent) for the next agent process on
// the same data dir to adopt.
func (a *Agent) shutdown(ctx context.Context) {
	if a.cfg.KeepPodsOnShutdown {
		a.mu.Lock()
		n := len(a.states)
		a.mu.Unlock()
		a.log.Info("agent stopping: pods keep running for the next agent to adopt", "pods", n)
		return
	}
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
