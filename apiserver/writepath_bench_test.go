package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/batchlet/batchlet/apiserver/inprocclient"
	"github.com/batchlet/batchlet/results"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkWritePath measures, one kind per sub-benchmark, the in-process
// writes a simulated pod makes, in the form its writer sends them: the Job
// controller's pod create and finalizer removal, the scheduler's binding
// and Scheduled event, the agent's status patch and ContainerResult:
// go test ./apiserver -run XXX -bench WritePath -benchmem (cpu-ms/op is the
// process CPU per write, steadier than ns/op on a shared machine).
func BenchmarkWritePath(b *testing.B) {
	ctx := context.Background()
	b.Run("pod create", func(b *testing.B) {
		client, _ := writePathServer(b)
		pods := client.CoreV1().Pods("default")
		b.ReportAllocs()
		b.ResetTimer()
		done := reportCPU(b)
		for i := range b.N {
			if _, err := pods.Create(ctx, jobPod(i), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("bind", func(b *testing.B) {
		client, _ := writePathServer(b)
		pods := client.CoreV1().Pods("default")
		created := createJobPods(ctx, b, pods, b.N, false)
		b.ReportAllocs()
		b.ResetTimer()
		done := reportCPU(b)
		for _, p := range created {
			bind := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
				Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
			if err := pods.Bind(ctx, bind, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("status patch", func(b *testing.B) {
		client, _ := writePathServer(b)
		pods := client.CoreV1().Pods("default")
		created := createJobPods(ctx, b, pods, b.N, true)
		b.ReportAllocs()
		b.ResetTimer()
		done := reportCPU(b)
		for i, p := range created {
			patch := agentStatusPatch(string(p.UID), i)
			if _, err := pods.Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("status patch version", func(b *testing.B) {
		client, calls := writePathServer(b)
		pods := client.CoreV1().Pods("default")
		created := createJobPods(ctx, b, pods, b.N, true)
		gvr := corev1.SchemeGroupVersion.WithResource("pods")
		b.ReportAllocs()
		b.ResetTimer()
		done := reportCPU(b)
		for i, p := range created {
			patch := agentStatusPatch(string(p.UID), i)
			if _, err := calls.PatchVersion(ctx, gvr, "default", p.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("finalizer patch", func(b *testing.B) {
		client, _ := writePathServer(b)
		pods := client.CoreV1().Pods("default")
		created := createJobPods(ctx, b, pods, b.N, true)
		patch := []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + batchv1.JobTrackingFinalizer + `"]}}`)
		b.ReportAllocs()
		b.ResetTimer()
		done := reportCPU(b)
		for _, p := range created {
			if _, err := pods.Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("result create", func(b *testing.B) {
		_, calls := writePathServer(b)
		bodies := make([][]byte, b.N)
		for i := range b.N {
			bodies[i] = resultJSON(b, jobPod(i))
		}
		b.ReportAllocs()
		b.ResetTimer()
		done := reportCPU(b)
		for _, body := range bodies {
			if err := calls.CreateJSON(ctx, results.GVR, "default", body, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	// The embedded agent's writers end to end, from the typed result:
	// its JSON body decoded by the server, or the decoded object built.
	for _, w := range []struct {
		name      string
		newWriter func(calls *InProcessCalls) results.Writer
	}{
		{"result write json", func(calls *InProcessCalls) results.Writer {
			return results.NewPostWriter(func(ctx context.Context, namespace string, body []byte) error {
				return calls.CreateJSON(ctx, results.GVR, namespace, body, metav1.CreateOptions{})
			})
		}},
		{"result write raw", func(calls *InProcessCalls) results.Writer {
			return results.NewRawPostWriter(func(ctx context.Context, namespace string, raw map[string]interface{}) error {
				return calls.CreateRaw(ctx, results.GVR, namespace, raw, metav1.CreateOptions{})
			}, nil)
		}},
	} {
		b.Run(w.name, func(b *testing.B) {
			_, calls := writePathServer(b)
			writer := w.newWriter(calls)
			rs := make([]*results.ContainerResult, b.N)
			for i := range b.N {
				rs[i] = typedResult(jobPod(i))
			}
			b.ReportAllocs()
			b.ResetTimer()
			done := reportCPU(b)
			for _, r := range rs {
				if err := writer.Create(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			done()
		})
	}
	b.Run("event create", func(b *testing.B) {
		client, _ := writePathServer(b)
		events := client.EventsV1().Events("default")
		now := metav1.NowMicro()
		b.ReportAllocs()
		b.ResetTimer()
		done := reportCPU(b)
		for i := range b.N {
			p := jobPod(i)
			ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", p.Name, i), Namespace: "default"},
				EventTime: now, ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-n1",
				Action: "Binding", Reason: "Scheduled", Type: corev1.EventTypeNormal,
				Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: p.Name, UID: types.UID(p.Name + "-uid"), APIVersion: "v1"},
				Note:      "Successfully assigned default/" + p.Name + " to n1"}
			if _, err := events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
}

// writePathServer is a fresh server's in-process client and calls.
func writePathServer(b *testing.B) (kubernetes.Interface, *InProcessCalls) {
	b.Helper()
	srv, client := benchServer(b)
	return inprocclient.New(client, srv.InProcessCalls()), srv.InProcessCalls()
}

// jobPod is the i-th pod of an Indexed Job as the Job controller creates
// it: the Job's labels and annotations, its owner reference and the
// tracking finalizer.
func jobPod(i int) *corev1.Pod {
	const job, uid = "pi", "0b9e5a4e-2f0e-4b5e-9d6a-6f1d2c3b4a59"
	index := fmt.Sprint(i)
	labels := map[string]string{
		"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
		"batch.kubernetes.io/job-name": job, "job-name": job,
		"batch.kubernetes.io/job-completion-index": index,
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-x%04d", job, i, i%10000), Namespace: "default", Labels: labels,
			Annotations:     map[string]string{"batch.kubernetes.io/job-completion-index": index},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job, UID: uid, Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}},
			Finalizers:      []string{batchv1.JobTrackingFinalizer}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Hostname: fmt.Sprintf("%s-%d", job, i),
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", "exit 0"},
				Env:       []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}}}},
	}
}

// createJobPods creates n job pods (bound to n1 if bound) for the
// benchmarks of later writes.
func createJobPods(ctx context.Context, b *testing.B, pods interface {
	Create(context.Context, *corev1.Pod, metav1.CreateOptions) (*corev1.Pod, error)
}, n int, bound bool) []*corev1.Pod {
	b.Helper()
	out := make([]*corev1.Pod, n)
	for i := range n {
		p := jobPod(i)
		if bound {
			p.Spec.NodeName = "n1"
		}
		c, err := pods.Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		out[i] = c
	}
	return out
}

// resultJSON is the ContainerResult the agent writes for p's container
// that exited 0, as JSON.
// typedResult is the result of p's container as the agent builds it.
func typedResult(p *corev1.Pod) *results.ContainerResult {
	p.UID = types.UID(p.Name + "-uid")
	p.Spec.NodeName = "n1"
	at := results.Attempt{Container: "main", State: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed",
		StartedAt: metav1.Now(), FinishedAt: metav1.Now()}}
	return results.New(p, at, "done\n", false)
}

func resultJSON(b *testing.B, p *corev1.Pod) []byte {
	b.Helper()
	u, err := results.ToUnstructured(typedResult(p))
	if err != nil {
		b.Fatal(err)
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		b.Fatal(err)
	}
	return data
}
