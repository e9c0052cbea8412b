package apiserver

import (
	"context"
	"fmt"
	"testing"

	"github.com/batchlet/batchlet/apiserver/inprocclient"
	"github.com/batchlet/batchlet/storage/memory"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkInProcessCalls compares the agent's and the Job controller's
// hottest calls over the in-process HTTP transport (protobuf) and through
// the in-process client: go test ./apiserver -run XXX -bench InProcessCalls.
func BenchmarkInProcessCalls(b *testing.B) {
	for _, client := range []string{"http", "inprocess"} {
		b.Run("status patch/"+client, func(b *testing.B) {
			pods := benchClientOf(b, client).CoreV1().Pods("default")
			ctx := context.Background()
			if _, err := pods.Create(ctx, testPod("p", "n1"), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				patch := fmt.Sprintf(`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":null,"message":"m%d"}]}}`, i)
				if _, err := pods.Patch(ctx, "p", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("pod create/"+client, func(b *testing.B) {
			pods := benchClientOf(b, client).CoreV1().Pods("default")
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := pods.Create(ctx, testPod(fmt.Sprintf("p%d", i), ""), metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchClientOf is a client of a fresh server: "http" over the in-process
// transport, "inprocess" the in-process client.
func benchClientOf(b *testing.B, kind string) kubernetes.Interface {
	b.Helper()
	srv, client := benchServer(b)
	if kind == "inprocess" {
		return inprocclient.New(client, srv.InProcessCalls())
	}
	return client
}

// benchServer is a fresh server for the benchmarks and its HTTP client
// over the in-process transport.
func benchServer(b *testing.B) (*Server, kubernetes.Interface) {
	b.Helper()
	srv, err := New(Config{Storage: memory.New(100000)})
	if err != nil {
		b.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(srv.InProcessConfig())
	if err != nil {
		b.Fatal(err)
	}
	return srv, client
}

// BenchmarkAgentStatusPatch sends the node agent's full status patch — the
// UID precondition, five conditions, a container status, the IPs and the
// start time — through the in-process client, as the agent does once or
// twice per pod: go test ./apiserver -run XXX -bench AgentStatusPatch.
func BenchmarkAgentStatusPatch(b *testing.B) {
	pods := benchClientOf(b, "inprocess").CoreV1().Pods("default")
	ctx := context.Background()
	pod, err := pods.Create(ctx, testPod("p", "n1"), metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		patch := agentStatusPatch(string(pod.UID), i)
		if _, err := pods.Patch(ctx, "p", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			b.Fatal(err)
		}
	}
}

// agentStatusPatch is a running pod's status patch as the agent renders
// it, its container started at second i (so every patch writes).
func agentStatusPatch(uid string, i int) string {
	const t = `"2026-11-26T14:00:00Z"`
	cond := func(typ string) string {
		return `{"type":"` + typ + `","status":"True","lastProbeTime":null,"lastTransitionTime":` + t + `,"reason":null,"message":null}`
	}
	started := fmt.Sprintf(`"2026-11-26T14:%02d:%02dZ"`, i/60%60, i%60)
	return `{"metadata":{"uid":"` + uid + `"},"status":{"phase":"Running",` +
		`"containerStatuses":[{"name":"main","state":{"running":{"startedAt":` + started + `}},"lastState":{},"ready":true,"restartCount":0,"image":"busybox","imageID":"","started":true}],` +
		`"conditions":[` + cond("PodReadyToStartContainers") + `,` + cond("Initialized") + `,` + cond("Ready") + `,` + cond("ContainersReady") + `,` + cond("PodScheduled") + `],` +
		`"hostIP":"127.0.0.1","hostIPs":[{"ip":"127.0.0.1"}],"podIP":"127.0.0.1","podIPs":[{"ip":"127.0.0.1"}],"startTime":` + t + `}}`
}
