package workqueue

import (
	"errors"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var (
	podA = Pod{Name: "a", UID: "uid-a"}
	podB = Pod{Name: "b", UID: "uid-b"}
)

// step is one operation on a queue and what it must give.
type step struct {
	op      string // lease, complete, release, end
	pod     Pod
	lease   string // complete/release: the lease id
	out     Outcome
	wantID  string
	wantErr error
}

func TestQueueStateMachine(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cases := []struct {
		name          string
		items         int
		steps         []step
		wantCompleted string
		wantLeases    []string
		wantAttempts  []int32
		wantReleased  int32
	}{
		{name: "empty queue is drained at once", items: 0,
			steps: []step{{op: "lease", pod: podA, out: Drained}}},
		{name: "items are leased lowest first, then wait, then drained", items: 2,
			steps: []step{
				{op: "lease", pod: podA, out: Leased, wantID: "0.1"},
				{op: "lease", pod: podB, out: Leased, wantID: "1.2"},
				{op: "lease", pod: podA, out: Wait},
				{op: "complete", pod: podA, lease: "0.1"},
				{op: "lease", pod: podA, out: Wait},
				{op: "complete", pod: podB, lease: "1.2"},
				{op: "lease", pod: podA, out: Drained},
			},
			wantCompleted: "0,1", wantAttempts: []int32{1, 1}},
		{name: "a lease completes once", items: 1,
			steps: []step{
				{op: "lease", pod: podA, out: Leased, wantID: "0.1"},
				{op: "complete", pod: podA, lease: "0.1"},
				{op: "complete", pod: podA, lease: "0.1", wantErr: ErrLeaseGone},
			},
			wantCompleted: "0", wantAttempts: []int32{1}},
		{name: "only the holder completes", items: 1,
			steps: []step{
				{op: "lease", pod: podA, out: Leased, wantID: "0.1"},
				{op: "complete", pod: podB, lease: "0.1", wantErr: ErrNotYours},
			},
			wantLeases: []string{"0.1"}, wantAttempts: []int32{1}},
		{name: "an ended pod's leases go back and are leased again", items: 3,
			steps: []step{
				{op: "lease", pod: podA, out: Leased, wantID: "0.1"},
				{op: "lease", pod: podA, out: Leased, wantID: "1.2"},
				{op: "lease", pod: podB, out: Leased, wantID: "2.3"},
				{op: "end", pod: podA},
				{op: "complete", pod: podA, lease: "0.1", wantErr: ErrLeaseGone},
				{op: "lease", pod: podB, out: Leased, wantID: "0.4"},
			},
			wantLeases: []string{"2.3", "0.4"}, wantAttempts: []int32{2, 1, 1}, wantReleased: 2},
		{name: "a released item is leased again; its old lease cannot complete", items: 2,
			steps: []step{
				{op: "lease", pod: podA, out: Leased, wantID: "0.1"},
				{op: "release", pod: podA, lease: "0.1"},
				{op: "lease", pod: podB, out: Leased, wantID: "0.2"},
				{op: "complete", pod: podA, lease: "0.1", wantErr: ErrLeaseGone},
				{op: "complete", pod: podB, lease: "0.2"},
				{op: "lease", pod: podB, out: Leased, wantID: "1.3"},
				{op: "complete", pod: podB, lease: "1.3"},
				{op: "lease", pod: podB, out: Drained},
			},
			wantCompleted: "0,1", wantAttempts: []int32{2, 1}, wantReleased: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := &WorkQueue{Spec: WorkQueueSpec{Items: make([]string, tc.items)}}
			for i, s := range tc.steps {
				var err error
				switch s.op {
				case "lease":
					var l Lease
					var out Outcome
					l, out, err = q.Lease(s.pod, clk.Now())
					if out != s.out || l.ID != s.wantID {
						t.Fatalf("step %d: lease = %q %v, want %q %v", i, l.ID, out, s.wantID, s.out)
					}
					if out == Leased && (l.Pod != s.pod.Name || l.LeasedAt != metav1.NewTime(clk.Now())) {
						t.Fatalf("step %d: lease = %+v", i, l)
					}
				case "complete":
					_, err = q.Complete(s.lease, s.pod.UID)
				case "release":
					_, err = q.Release(s.lease, s.pod.UID)
				case "end":
					q.ReleasePods(func(l Lease) bool { return l.PodUID == s.pod.UID })
				}
				if !errors.Is(err, s.wantErr) {
					t.Fatalf("step %d (%s %s): err = %v, want %v", i, s.op, s.lease, err, s.wantErr)
				}
			}
			var leases []string
			for _, l := range q.Status.Leases {
				leases = append(leases, l.ID)
			}
			if q.Status.Completed != tc.wantCompleted || !reflect.DeepEqual(leases, tc.wantLeases) ||
				!reflect.DeepEqual(q.Status.Attempts, tc.wantAttempts) || q.Status.Released != tc.wantReleased {
				t.Errorf("status = completed %q leases %v attempts %v released %d, want %q %v %v %d", q.Status.Completed, leases,
					q.Status.Attempts, q.Status.Released, tc.wantCompleted, tc.wantLeases, tc.wantAttempts, tc.wantReleased)
			}
			if int(q.Status.CompletedCount)+len(q.Status.Leases)+q.Pending() != tc.items {
				t.Errorf("completed %d + leased %d + pending %d != %d items", q.Status.CompletedCount, len(q.Status.Leases), q.Pending(), tc.items)
			}
		})
	}
}
