package process

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/batchlet/batchlet/runtime"
)

// syncBuffer is a bytes.Buffer safe for the attach goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// kubectl run -i: a container with stdin and stdinOnce reads what the
// attached client sends, sees EOF when the client's stdin ends, and its
// output after the attach reaches the client (stderr apart).
func TestAttachStdinOnce(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	c := shC("main", `echo before; read line; echo "got $line"; echo oops >&2; cat; echo "eof seen"`)
	c.Stdin, c.StdinOnce = true, true
	if err := r.StartPod(context.Background(), testPod("att1", corev1.RestartPolicyNever, c), fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r, "att1", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- r.Attach(context.Background(), "att1", "main", runtime.ExecStreams{
			Stdin: strings.NewReader("hello\nrest\n"), Stdout: &stdout, Stderr: &stderr})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("attach did not end when the container exited")
	}
	if got := stdout.String(); !strings.HasSuffix(got, "got hello\nrest\neof seen\n") {
		t.Errorf("attached stdout = %q", got)
	}
	if got := stderr.String(); got != "oops\n" {
		t.Errorf("attached stderr = %q", got)
	}
	// stdout and stderr are separate pipes: only the set of lines is certain.
	got := strings.Split(strings.TrimSpace(logs(t, r, "att1", "main", runtime.LogOptions{})), "\n")
	slices.Sort(got)
	if want := []string{"before", "eof seen", "got hello", "oops", "rest"}; !slices.Equal(got, want) {
		t.Errorf("log lines = %q, want %q", got, want)
	}
}

// Without stdin in its spec a container reads /dev/null, and attaching
// only streams its output.
func TestAttachWithoutStdin(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	if err := r.StartPod(context.Background(), testPod("att2", corev1.RestartPolicyNever, shC("main", "cat; echo cat-ended; sleep 30")), fakeResolver{}); err != nil {
		t.Fatal(err)
	}
	defer r.RemovePod("att2")
	waitStatus(t, r, "att2", "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Attach(ctx, "att2", "main", runtime.ExecStreams{Stdin: strings.NewReader("x"), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs(t, r, "att2", "main", runtime.LogOptions{}), "cat-ended") {
		if time.Now().After(deadline) {
			t.Fatal("cat never saw EOF on /dev/null")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
