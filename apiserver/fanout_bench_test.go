package apiserver

import (
	"context"
	"fmt"
	"testing"

	"github.com/batchlet/batchlet/apiserver/inprocclient"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// BenchmarkWatchFanout is one stored write (the agent's pod status patch)
// delivered to N in-process watches of pods, as the embedded control
// plane's informers have them: all pods, one node's pods (a field
// selector, as the agent's), metadata only (the garbage collector's). The
// cost beyond watchers=0 is the fan-out's:
// go test ./apiserver -run XXX -bench WatchFanout -benchmem.
func BenchmarkWatchFanout(b *testing.B) {
	for _, n := range []int{0, 1, 3, 9} {
		b.Run(fmt.Sprintf("watchers=%d", n), func(b *testing.B) { benchmarkWatchFanout(b, n) })
	}
}

func benchmarkWatchFanout(b *testing.B, n int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, client := benchServer(b)
	pods := inprocclient.New(client, srv.InProcessCalls()).CoreV1().Pods("default")
	pod, err := pods.Create(ctx, jobLikePod("p", "n1"), metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	watches := make([]watch.Interface, n)
	for i := range watches {
		watches[i] = fanoutWatch(ctx, b, srv, i%3, pod.ResourceVersion)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		patch := agentStatusPatch(string(pod.UID), i)
		if _, err := pods.Patch(ctx, "p", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			b.Fatal(err)
		}
		for _, w := range watches {
			if ev := <-w.ResultChan(); ev.Type != watch.Modified {
				b.Fatalf("event %s %v, want MODIFIED", ev.Type, ev.Object)
			}
		}
	}
}

// fanoutWatch is a local watch of pods from rv: of all pods (kind 0), of
// node n1's (1), of all pods' metadata (2).
func fanoutWatch(ctx context.Context, b *testing.B, srv *Server, kind int, rv string) watch.Interface {
	b.Helper()
	var tweak func(*metav1.ListOptions)
	if kind == 1 {
		tweak = func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName=n1" }
	}
	lw, err := srv.LocalListerWatcher(corev1.SchemeGroupVersion.WithResource("pods"), "", kind == 2, tweak)
	if err != nil {
		b.Fatal(err)
	}
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	return w
}

// jobLikePod is a pod the size of an Indexed Job's: its labels,
// annotation, owner, finalizer, a command, env and the service-account
// volume.
func jobLikePod(name, node string) *corev1.Pod {
	pod := testPod(name, node)
	pod.Labels = map[string]string{"batch.kubernetes.io/controller-uid": "0b5c3f4e-8a52-4c52-9d1e-2f8d7f5b1c11",
		"batch.kubernetes.io/job-name": "sim", "controller-uid": "0b5c3f4e-8a52-4c52-9d1e-2f8d7f5b1c11",
		"job-name": "sim", "batch.kubernetes.io/job-completion-index": "7"}
	pod.Annotations = map[string]string{"batch.kubernetes.io/job-completion-index": "7"}
	pod.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "sim",
		UID: "0b5c3f4e-8a52-4c52-9d1e-2f8d7f5b1c11", Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}}
	c := &pod.Spec.Containers[0]
	c.Command = []string{"true"}
	c.Env = []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptrTo(int64(3607))}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		}}}}}
	pod.Spec.Hostname, pod.Spec.Subdomain = "sim-7", "sim"
	pod.Spec.Tolerations = []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))}}
	return pod
}
