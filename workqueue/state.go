package workqueue

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batchlet/batchlet/indexset"
)

// Outcome is what a lease request gets.
type Outcome int

const (
	// Leased: an item was handed out.
	Leased Outcome = iota
	// Drained: every item is complete; the worker should exit (HTTP 204).
	Drained
	// Wait: no item is free but some are leased out and may come back
	// (HTTP 503 with Retry-After).
	Wait
)

// Pod names the pod a lease is for.
type Pod struct{ Name, UID string }

// Errors of Complete and Release.
var (
	// ErrLeaseGone: the lease was completed, or released and perhaps
	// leased again; the worker's result must not count.
	ErrLeaseGone = errors.New("lease gone")
	// ErrNotYours: the lease belongs to another pod.
	ErrNotYours = errors.New("lease held by another pod")
)

// Pending counts the items neither complete nor leased.
func (q *WorkQueue) Pending() int {
	return len(q.Spec.Items) - int(q.Status.CompletedCount) - len(q.Status.Leases)
}

// Lease hands the lowest free item to pod, or says why it cannot.
func (q *WorkQueue) Lease(pod Pod, now time.Time) (Lease, Outcome, error) {
	done, err := parseCompleted(q.Status.Completed, len(q.Spec.Items))
	if err != nil {
		return Lease{}, 0, err
	}
	leased := make(map[int32]bool, len(q.Status.Leases))
	for _, l := range q.Status.Leases {
		leased[l.Item] = true
	}
	for i := range q.Spec.Items {
		if done[i] || leased[int32(i)] {
			continue
		}
		if len(q.Status.Attempts) != len(q.Spec.Items) {
			q.Status.Attempts = make([]int32, len(q.Spec.Items))
		}
		q.Status.LeaseCount++
		q.Status.Attempts[i]++
		l := Lease{ID: strconv.Itoa(i) + "." + strconv.FormatInt(q.Status.LeaseCount, 10), Item: int32(i),
			Pod: pod.Name, PodUID: pod.UID, LeasedAt: metav1.NewTime(now.Truncate(time.Second))}
		q.Status.Leases = append(q.Status.Leases, l)
		return l, Leased, nil
	}
	if len(q.Status.Leases) == 0 {
		return Lease{}, Drained, nil
	}
	return Lease{}, Wait, nil
}

// Attempt is how many times item was leased, this lease included.
func (q *WorkQueue) Attempt(item int32) int32 {
	if int(item) < len(q.Status.Attempts) {
		return q.Status.Attempts[item]
	}
	return 0
}

// Complete marks the item of lease id complete. Only the pod holding the
// lease may complete it, and only once.
func (q *WorkQueue) Complete(id string, podUID string) (Lease, error) {
	l, i, err := q.held(id, podUID)
	if err != nil {
		return Lease{}, err
	}
	done, err := parseCompleted(q.Status.Completed, len(q.Spec.Items))
	if err != nil {
		return Lease{}, err
	}
	done[l.Item] = true
	q.Status.Completed = indexset.Format(done)
	q.Status.CompletedCount++
	q.Status.Leases = slices.Delete(q.Status.Leases, i, i+1)
	return l, nil
}

// Release puts the item of lease id back in the queue.
func (q *WorkQueue) Release(id string, podUID string) (Lease, error) {
	l, i, err := q.held(id, podUID)
	if err != nil {
		return Lease{}, err
	}
	q.Status.Leases = slices.Delete(q.Status.Leases, i, i+1)
	q.Status.Released++
	return l, nil
}

func (q *WorkQueue) held(id string, podUID string) (Lease, int, error) {
	i := slices.IndexFunc(q.Status.Leases, func(l Lease) bool { return l.ID == id })
	if i < 0 {
		return Lease{}, 0, fmt.Errorf("lease %q: %w", id, ErrLeaseGone)
	}
	if l := q.Status.Leases[i]; l.PodUID != podUID {
		return Lease{}, 0, fmt.Errorf("lease %q is pod %s's: %w", id, l.Pod, ErrNotYours)
	}
	return q.Status.Leases[i], i, nil
}

// ReleasePods puts back the items leased to the pods (by UID) ended says
// have ended, and returns how many went back.
func (q *WorkQueue) ReleasePods(ended func(Lease) bool) int {
	n := len(q.Status.Leases)
	q.Status.Leases = slices.DeleteFunc(q.Status.Leases, ended)
	released := n - len(q.Status.Leases)
	q.Status.Released += int32(released)
	return released
}
