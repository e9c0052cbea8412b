package process

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/batchlet/batchlet/runtime"
)

// TestLogsOfAPodThatEndedBeforeTheRuntime: a pod this runtime never ran (it
// ended before a restart) still shows its last attempt's log, and with
// Previous the one before, from its directory.
func TestLogsOfAPodThatEndedBeforeTheRuntime(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	layout := (*pod).logPath
	oldLogAt(t, r, layout, "gone", "main", 0, "first attempt")
	oldLogAt(t, r, layout, "gone", "main", 1, "second attempt")
	for _, tc := range []struct {
		previous bool
		want     string
	}{{false, "second attempt\n"}, {true, "first attempt\n"}} {
		var out bytes.Buffer
		if err := r.Logs(context.Background(), "gone", "main", runtime.LogOptions{Previous: tc.previous, Follow: true}, &out); err != nil || out.String() != tc.want {
			t.Errorf("previous=%v: %q, %v; want %q", tc.previous, out.String(), err, tc.want)
		}
	}
	err := r.Logs(context.Background(), "gone", "sidecar", runtime.LogOptions{}, &bytes.Buffer{})
	if !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("a container without logs: %v, want ErrNotFound", err)
	}
}
