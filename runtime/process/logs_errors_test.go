package process

import (
	"bytes"
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/batchlet/batchlet/runtime"
)

// The agent sends these messages to users (kubectl logs) as they are: they
// must read exactly as the kubelet's, and still match ErrNotFound.
func TestLogsErrorMessagesAreTheKubelets(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	p := testPod("u-logerr", corev1.RestartPolicyNever, shC("main", "echo once"))
	if err := r.StartPod(context.Background(), p, fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "u-logerr", "done", func(s runtime.PodStatus) bool { return s.Done })
	for _, tc := range []struct {
		name, container string
		opts            runtime.LogOptions
		want            string
	}{
		{"no previous attempt", "main", runtime.LogOptions{Previous: true}, `previous terminated container "main" in pod "p-u-logerr" not found`},
		{"unknown container", "nope", runtime.LogOptions{}, `container nope is not valid for pod p-u-logerr`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.Logs(context.Background(), "u-logerr", tc.container, tc.opts, &bytes.Buffer{})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
			if !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("errors.Is(%v, ErrNotFound) = false", err)
			}
		})
	}
}
