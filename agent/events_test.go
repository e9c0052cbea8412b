package agent

import (
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	clocktesting "k8s.io/utils/clock/testing"
)

// Events beyond the burst are dropped until the rate gives new tokens.
func TestThrottledRecorderDropsBeyondTheRate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fake := record.NewFakeRecorder(10)
	r := &throttledRecorder{EventRecorder: fake, log: slog.New(slog.DiscardHandler),
		limit: flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(1, 2, clk)}
	pod := &corev1.Pod{}
	r.Event(pod, corev1.EventTypeNormal, "Pulled", "a")
	r.Eventf(pod, corev1.EventTypeNormal, "Created", "%s", "b")
	r.AnnotatedEventf(pod, nil, corev1.EventTypeNormal, "Started", "%s", "c")
	clk.Step(time.Second)
	r.Event(pod, corev1.EventTypeNormal, "Pulled", "d")
	close(fake.Events)
	var got []string
	for e := range fake.Events {
		got = append(got, e)
	}
	want := []string{"Normal Pulled a", "Normal Created b", "Normal Pulled d"}
	if len(got) != len(want) {
		t.Fatalf("recorded %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("recorded %q, want %q", got, want)
		}
	}
	if n := r.dropped.Load(); n != 1 {
		t.Fatalf("dropped %d, want 1", n)
	}
}
