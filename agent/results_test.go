package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batchlet/batchlet/results"
	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/sim"
)

// loggingRuntime is the sim runtime whose containers all logged the same.
type loggingRuntime struct {
	*sim.Runtime
	log string
}

func (r loggingRuntime) Logs(ctx context.Context, uid types.UID, container string, opts runtime.LogOptions, w io.Writer) error {
	if err := r.Runtime.Logs(ctx, uid, container, opts, w); err != nil {
		return err
	}
	_, err := io.WriteString(w, r.log)
	return err
}

// TestTerminatedContainerRecorded: a container that terminates leaves a
// ContainerResult with its exit code, reason, times, node, Job and the end
// of its log; it has no owner.
func TestTerminatedContainerRecorded(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), map[schema.GroupVersionResource]string{results.GVR: "ContainerResultList"})
	h := newHarnessWith(t, func(c *Config) {
		c.FirstStatusDelay = -1
		c.Runtime = loggingRuntime{Runtime: c.Runtime.(*sim.Runtime), log: "first line\nsecond line\nthe end\n"}
		c.Results = ResultsConfig{Writer: results.DynamicWriter{Client: dyn}, LogTailBytes: 20}
	})
	ctrl := true
	pod := boundPod("pi-0-abc", map[string]string{sim.ExitCodeAnnotation: "3"})
	pod.Labels = map[string]string{"batch.kubernetes.io/job-name": "pi", "batch.kubernetes.io/job-completion-index": "0"}
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "pi", UID: "job-uid", Controller: &ctrl}}
	h.create(pod)
	p := h.waitPhase("pi-0-abc", corev1.PodFailed)
	term := p.Status.ContainerStatuses[0].State.Terminated

	var got *results.ContainerResult
	h.eventually("the result", func() bool {
		u, err := dyn.Resource(results.GVR).Namespace("default").Get(context.Background(), "pi-0-abc.main.0", metav1.GetOptions{})
		if err != nil {
			return false
		}
		got, err = results.FromUnstructured(u)
		return err == nil
	})
	s := got.Spec
	if s.ExitCode != 3 || s.Reason != "Error" || s.JobName != "pi" || s.JobUID != "job-uid" || s.CompletionIndex == nil || *s.CompletionIndex != 0 ||
		s.NodeName != "node-1" || s.PodUID != "uid-pi-0-abc" || s.Attempt != 0 || !s.FinishedAt.Equal(&term.FinishedAt) {
		t.Errorf("result = %+v, want exit 3 Error of job pi index 0 on node-1 finished %s", s, term.FinishedAt)
	}
	if s.LogTail != "second line\nthe end\n" || !s.LogTruncated {
		t.Errorf("log tail = %q truncated %v, want the last whole lines within 20 bytes", s.LogTail, s.LogTruncated)
	}
	if len(got.OwnerReferences) != 0 {
		t.Errorf("owners = %v, want none (results outlive the pod and Job)", got.OwnerReferences)
	}
	l, err := dyn.Resource(results.GVR).Namespace("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("results = %v, %v; want exactly one", l, err)
	}
}

// countingWriter counts creates by name; with gate set, each create waits
// for a value from it first.
type countingWriter struct {
	gate    chan struct{}
	mu      sync.Mutex
	created map[string]int
}

func (w *countingWriter) Create(ctx context.Context, r *results.ContainerResult) error {
	if w.gate != nil {
		select {
		case <-w.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.created == nil {
		w.created = map[string]int{}
	}
	w.created[r.Name]++
	return nil
}

func (w *countingWriter) counts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.created)
}

// A result create that hangs does not hold the pod's terminal status back,
// and the result is written once when the writer can go on.
func TestResultWriteOffTheStatusPath(t *testing.T) {
	w := &countingWriter{gate: make(chan struct{})}
	h := newHarnessWith(t, func(c *Config) {
		c.FirstStatusDelay = -1
		c.Results = ResultsConfig{Writer: w}
	})
	h.create(boundPod("r1", nil))
	h.waitPhase("r1", corev1.PodSucceeded)
	if got := w.counts(); len(got) != 0 {
		t.Fatalf("results written before the writer went on: %v", got)
	}
	close(w.gate)
	h.eventually("the result", func() bool { return w.counts()["r1.main.0"] == 1 })
	if got := w.counts(); len(got) != 1 {
		t.Fatalf("results = %v, want exactly r1.main.0 once", got)
	}
}

// The queue never drops: adds past its size wait, and close writes
// everything queued, each result once.
func TestResultQueueWritesEachOnce(t *testing.T) {
	for _, tc := range []struct {
		name             string
		size, writers    int
		results          int
		releaseBeforeAdd bool
	}{
		{name: "more results than room", size: 1, writers: 1, results: 5},
		{name: "several writers", size: 4, writers: 3, results: 20},
		{name: "writer free from the start", size: 2, writers: 2, results: 10, releaseBeforeAdd: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &countingWriter{gate: make(chan struct{})}
			if tc.releaseBeforeAdd {
				close(w.gate)
			}
			q := newResultQueue(w, slog.New(slog.DiscardHandler), clocktesting.NewFakeClock(time.Now()), tc.size, tc.writers)
			added := make(chan struct{})
			go func() {
				for i := range tc.results {
					q.add(&results.ContainerResult{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p.c.%d", i)}})
				}
				close(added)
			}()
			if !tc.releaseBeforeAdd {
				close(w.gate)
			}
			<-added
			q.close(time.Hour)
			got := w.counts()
			if len(got) != tc.results {
				t.Fatalf("%d results written, want %d: %v", len(got), tc.results, got)
			}
			for name, n := range got {
				if n != 1 {
					t.Errorf("%s written %d times, want once", name, n)
				}
			}
		})
	}
}

// A stopping agent whose writes hang gives up after the drain timeout: the
// remaining writes fail (logged) instead of holding the stop.
func TestResultQueueCloseGivesUpAfterDrain(t *testing.T) {
	w := &countingWriter{gate: make(chan struct{})}
	clk := clocktesting.NewFakeClock(time.Now())
	q := newResultQueue(w, slog.New(slog.DiscardHandler), clk, 4, 1)
	q.add(&results.ContainerResult{ObjectMeta: metav1.ObjectMeta{Name: "p.c.0"}})
	closed := make(chan struct{})
	go func() { q.close(time.Second); close(closed) }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Second)
	<-closed
	if got := w.counts(); len(got) != 0 {
		t.Fatalf("results = %v, want none (the write hung)", got)
	}
}
