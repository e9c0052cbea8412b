package process

import "time"

const (
	initialBackoff = 10 * time.Second
	maxBackoff     = 5 * time.Minute
	// backoffReset is how long a container must have run for its crash-loop
	// back-off to start over.
	backoffReset = 10 * time.Minute
)

// restartDelay decides, after an attempt that ran for ran, how long to wait
// before the next start and what back-off to remember, as the kubelet does:
// the first restart is immediate, then 10s doubling up to 5 minutes, and a
// container that ran 10 minutes starts over.
func restartDelay(prev, ran time.Duration) (delay, next time.Duration) {
	if ran >= backoffReset {
		prev = 0
	}
	if prev == 0 {
		return 0, initialBackoff
	}
	return prev, min(2*prev, maxBackoff)
}

// shouldRestart applies the pod's restartPolicy to a terminated container.
func shouldRestart(policy string, exitCode int32) bool {
	switch policy {
	case "Always", "":
		return true
	case "OnFailure":
		return exitCode != 0
	}
	return false
}
