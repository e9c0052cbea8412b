package agent

import (
	"context"
	"io"
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

// countingWriter counts creates by name.
type countingWriter struct {
	mu      sync.Mutex
	created map[string]int
}

func (w *countingWriter) Create(ctx context.Context, r *results.ContainerResult) error {
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

// TestAPIWritesPerPod counts what the agent asks of the API for one pod:
// a status patch per state it observes at sync time (a pod that ends before
// its first status is written goes Pending -> terminal in one write), a
// result per terminated attempt, and no reads (the informer serves them).
func TestAPIWritesPerPod(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ann        map[string]string
		firstDelay time.Duration
		runFor     time.Duration // clock steps once the pod is Running, or its first status held
		want       corev1.PodPhase
		patches    int
	}{
		{name: "exits at once", firstDelay: -1, want: corev1.PodSucceeded, patches: 1},
		{name: "fails at once", ann: map[string]string{sim.ExitCodeAnnotation: "3"}, firstDelay: -1, want: corev1.PodFailed, patches: 1},
		{name: "runs, then exits", ann: map[string]string{sim.DurationAnnotation: "5s"}, firstDelay: -1, runFor: 5 * time.Second,
			want: corev1.PodSucceeded, patches: 2},
		{name: "exits while its first status is held", ann: map[string]string{sim.DurationAnnotation: "500ms"}, firstDelay: time.Second,
			runFor: 500 * time.Millisecond, want: corev1.PodSucceeded, patches: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &countingWriter{}
			h := newHarnessWith(t, func(c *Config) {
				c.FirstStatusDelay = tc.firstDelay
				c.Results = ResultsConfig{Writer: w}
			})
			h.client.ClearActions()
			h.create(boundPod("w", tc.ann))
			if tc.runFor > 0 {
				if tc.firstDelay > 0 {
					h.eventually("first status held", func() bool { return h.held("w") })
				} else {
					h.waitStoredPhase("w", corev1.PodRunning)
				}
				h.clock.Step(tc.runFor)
			}
			h.waitStoredPhase("w", tc.want)
			h.eventually("the result", func() bool { return w.counts()["w.main.0"] == 1 })
			got := map[string]int{}
			for _, a := range h.client.Actions() {
				if a.GetResource().Resource != "pods" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
					continue
				}
				got[a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource()]++
			}
			delete(got, "create pods/") // the test's
			want := map[string]int{"patch pods/status": tc.patches}
			if !maps.Equal(got, want) {
				t.Errorf("pod requests = %v, want %v", got, want)
			}
			if r := w.counts(); len(r) != 1 {
				t.Errorf("results = %v, want one", r)
			}
		})
	}
}

// waitStoredPhase waits for the pod's phase reading the fake's tracker,
// which records no action.
func (h *harness) waitStoredPhase(name string, phase corev1.PodPhase) {
	h.t.Helper()
	h.eventually("pod "+name+" "+string(phase), func() bool {
		o, err := h.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "default", name)
		return err == nil && o.(*corev1.Pod).Status.Phase == phase
	})
}
