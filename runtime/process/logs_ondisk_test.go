package process

import (
	"bytes"
	"context"
	"errors"
	"os"
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

// An empty log reads as nothing, followed or not; a missing one is an
// error.
func TestReadLogOfEmptyAndMissingFiles(t *testing.T) {
	dir := t.TempDir()
	empty := dir + "/c.0.log"
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, follow := range []bool{false, true} {
		var out bytes.Buffer
		err := readLog(context.Background(), empty, runtime.LogOptions{Follow: follow}, func() bool { return true }, &out)
		if err != nil || out.Len() != 0 {
			t.Errorf("follow=%v: %q, %v; want nothing", follow, out.String(), err)
		}
	}
	if err := readLog(context.Background(), dir+"/none.log", runtime.LogOptions{}, func() bool { return true }, &bytes.Buffer{}); err == nil {
		t.Error("a missing log read without an error")
	}
}
