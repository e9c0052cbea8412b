package jobset

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestRunReconcilesThroughInformers runs the real informer/workqueue loop
// against the fake clients and waits for the child Jobs to appear.
func TestRunReconcilesThroughInformers(t *testing.T) {
	h := newHarness(t, seedLeaderWorkers("js").obj())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.c.Run(ctx, 2) }()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return slices.Equal(h.jobNames(), []string{"js-leader-0", "js-workers-0"}), nil
	})
	if err != nil {
		t.Fatalf("child jobs never appeared: %v (jobs %v)", err, h.jobNames())
	}
	// A child Job failing is seen through the Job informer and fails the JobSet.
	h.failJob("js-leader-0", "BackoffLimitExceeded")
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return h.jobSet().Status.TerminalState == "Failed", nil
	})
	if err != nil {
		t.Fatalf("jobset never failed: %v (status %+v)", err, h.jobSet().Status)
	}
	if _, err := h.kube.CoreV1().Services("default").Get(ctx, "js", metav1.GetOptions{}); err != nil {
		t.Errorf("headless service: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run returned %v", err)
	}
}
