package jobset

import (
	"testing"

	"slices"

	k8stesting "k8s.io/client-go/testing"
)

func TestWrittenVersions(t *testing.T) {
	tests := map[string]struct {
		from, to string
		cached   []string // resourceVersions the cache shows, in turn
		want     []bool
	}{
		"cache still shows the replaced copy": {from: "5", to: "6", cached: []string{"5", "5"}, want: []bool{true, true}},
		"cache caught up, then forgotten":     {from: "5", to: "6", cached: []string{"6", "5"}, want: []bool{false, false}},
		"no-op update brings no event":        {from: "5", to: "5", cached: []string{"5"}, want: []bool{false}},
		"no resourceVersion to wait for":      {from: "", to: "6", cached: []string{""}, want: []bool{false}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := newWrittenVersions()
			w.wrote("ns/js", tc.from, tc.to)
			for i, rv := range tc.cached {
				if got := w.behind("ns/js", rv); got != tc.want[i] {
					t.Errorf("behind(%q) #%d = %v, want %v", rv, i, got, tc.want[i])
				}
			}
		})
	}
}

// A sync that runs before the JobSet informer shows the controller's own
// status update makes no API call; once the cache catches up it goes on.
func TestSyncWaitsForCacheToShowItsStatusUpdate(t *testing.T) {
	h := newHarness(t, seedLeaderWorkers("js").obj())
	h.reconcile()
	h.failJob("js-leader-0", "BackoffLimitExceeded")
	h.refresh()
	// The JobSet fails: a status update the cache has not seen.
	if _, err := h.c.sync(h.ctx, h.key); err != nil {
		t.Fatal(err)
	}
	if h.jobSet().Status.TerminalState != "Failed" {
		t.Fatalf("jobset status %+v, want Failed", h.jobSet().Status)
	}
	kubeCalls, jobsetCalls := len(h.kube.Actions()), len(h.jobsets.Actions())
	// A Job event before the JobSet's: the cache still shows it running.
	if _, err := h.c.sync(h.ctx, h.key); err != nil {
		t.Fatal(err)
	}
	if len(h.kube.Actions()) != kubeCalls || len(h.jobsets.Actions()) != jobsetCalls {
		t.Errorf("sync on the stale JobSet called the API: %v %v", h.kube.Actions()[kubeCalls:], h.jobsets.Actions()[jobsetCalls:])
	}
	h.reconcile()
	var deleted []string
	for _, a := range h.kube.Actions()[kubeCalls:] {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			deleted = append(deleted, d.GetName())
		}
	}
	if !slices.Equal(deleted, []string{"js-workers-0"}) {
		t.Errorf("deleted %v once the cache caught up, want the failed JobSet's active js-workers-0", deleted)
	}
}
