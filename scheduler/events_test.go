package scheduler

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// Every event reaches the API across broadcaster replacements, each as
// its own events.k8s.io/v1 Event from the scheduler.
func TestRotatingRecorderRecordsAcrossBroadcasters(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	r := newRotatingRecorder(client, clk)
	r.perGen = 2
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := r.start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.shutdown()
	first := r.current
	const n = 5
	for i := range n {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p" + string(rune('a'+i)), UID: "u", ResourceVersion: "1"}}
		r.Eventf(pod, nil, corev1.EventTypeNormal, "Scheduled", "Binding", "Successfully assigned %v/%v to %v", pod.Namespace, pod.Name, "n1")
	}
	if r.current == first || r.current.recorded != 1 {
		t.Errorf("after %d events with 2 per broadcaster: current recorded %d (first replaced: %v), want the third broadcaster with 1", n, r.current.recorded, r.current != first)
	}
	err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := client.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err == nil && len(l.Items) != n && ctx.Err() == nil {
			t.Logf("%d events", len(l.Items))
		}
		return err == nil && len(l.Items) == n, err
	})
	if err != nil {
		t.Fatalf("events recorded: %v", err)
	}
	// The replaced broadcasters stop once the grace has passed.
	if first.ctx.Err() != nil {
		t.Error("first broadcaster stopped before its grace passed")
	}
	clk.Step(retiredGrace)
	select {
	case <-first.ctx.Done():
	case <-time.After(30 * time.Second):
		t.Error("first broadcaster still running after its grace")
	}
	l, _ := client.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
	for _, e := range l.Items {
		if e.ReportingController != Name || e.Reason != "Scheduled" || e.Action != "Binding" || e.Note != "Successfully assigned ns/"+e.Regarding.Name+" to n1" {
			t.Errorf("event %+v", e)
		}
	}
}
