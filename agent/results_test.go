package agent

import (
	"context"
	"io"
	"testing"

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
