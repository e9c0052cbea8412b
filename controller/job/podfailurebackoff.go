package job

import (
	"fmt"
	"strings"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

// PodFailureBackoffAnnotation sets a Job's own pod-failure backoff, in place
// of the controller's: "initial=1s,max=30s" (either part may be left out and
// keeps the controller's value). It is batchlet's, not upstream's; upstream
// has only the controller-wide 10 s doubling up to 10 min (kubernetes#94012).
const PodFailureBackoffAnnotation = "batchlet.dev/pod-failure-backoff"

// eventInvalidPodFailureBackoff is the Warning event of a Job whose
// annotation cannot be read; the Job then runs with the controller's values.
const eventInvalidPodFailureBackoff = "InvalidPodFailureBackoff"

// ValidatePodFailureBackoff checks a controller-wide backoff: both delays
// positive and the initial one no longer than the cap.
func ValidatePodFailureBackoff(initial, limit time.Duration) error {
	switch {
	case initial <= 0:
		return fmt.Errorf("initial pod failure backoff %v: must be positive", initial)
	case limit <= 0:
		return fmt.Errorf("maximal pod failure backoff %v: must be positive", limit)
	case initial > limit:
		return fmt.Errorf("initial pod failure backoff %v is above the maximum %v", initial, limit)
	}
	return nil
}

// parsePodFailureBackoff reads the annotation's value over the defaults
// initial and limit. A cap below the default initial delay lowers the
// initial delay with it, unless that is given too.
func parsePodFailureBackoff(value string, initial, limit time.Duration) (time.Duration, time.Duration, error) {
	var gotInitial bool
	for _, item := range strings.Split(value, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return 0, 0, fmt.Errorf("%q is not key=duration (want e.g. initial=1s,max=30s)", strings.TrimSpace(item))
		}
		d, err := time.ParseDuration(strings.TrimSpace(val))
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", key, err)
		}
		if d <= 0 {
			return 0, 0, fmt.Errorf("%s=%v: must be positive", key, d)
		}
		switch strings.TrimSpace(key) {
		case "initial":
			initial, gotInitial = d, true
		case "max":
			limit = d
		default:
			return 0, 0, fmt.Errorf("unknown key %q: want initial or max", key)
		}
	}
	if initial > limit {
		if gotInitial {
			return 0, 0, fmt.Errorf("initial=%v is above max=%v", initial, limit)
		}
		initial = limit
	}
	return initial, limit, nil
}

// jobTunables applies the Job's backoff annotation to the controller's
// tunables. A value that cannot be read leaves them as they are and yields
// a Warning event.
func jobTunables(job *batch.Job, tun tunables) (tunables, *event) {
	value, ok := job.Annotations[PodFailureBackoffAnnotation]
	if !ok {
		return tun, nil
	}
	initial, limit, err := parsePodFailureBackoff(value, tun.podFailureBackOff, tun.maxPodFailureBackOff)
	if err != nil {
		msg := fmt.Sprintf("annotation %s=%q: %v; using initial=%v,max=%v", PodFailureBackoffAnnotation, value, err,
			tun.podFailureBackOff, tun.maxPodFailureBackOff)
		return tun, &event{kind: v1.EventTypeWarning, reason: eventInvalidPodFailureBackoff, message: msg}
	}
	tun.podFailureBackOff, tun.maxPodFailureBackOff = initial, limit
	return tun, nil
}
