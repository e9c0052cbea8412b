package nodelifecycle

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

func TestSilentNodeGetsUnknownTaintedAndPodsEvicted(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: LeaseNamespace, Name: "n1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p"}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	client := fake.NewClientset(node, lease, pod)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(controllerctx.Context{Client: client, Informers: factory, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: prometheus.NewRegistry()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), c.synced...)

	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); len(n.Spec.Taints) != 0 {
		t.Fatalf("healthy node tainted: %v", n.Spec.Taints)
	}
	clk.Step(DefaultGracePeriod + time.Second)
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	n, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if readyStatus(n) != corev1.ConditionUnknown {
		t.Errorf("Ready = %v, want Unknown", readyStatus(n))
	}
	var noExecute bool
	for _, tt := range n.Spec.Taints {
		noExecute = noExecute || (tt.Key == TaintUnreachable && tt.Effect == corev1.TaintEffectNoExecute)
	}
	if !noExecute {
		t.Fatalf("taints = %v, want unreachable:NoExecute", n.Spec.Taints)
	}
	// The informer must see the taint before the taint manager acts.
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(mustNode(t, c, "n1").Spec.Taints) > 0, nil
	}); err != nil {
		t.Fatal("informer never saw the taint")
	}
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	var patchedCond, deleted bool
	for _, a := range client.Actions() {
		if pa, ok := a.(interface{ GetPatch() []byte }); ok && a.GetResource().Resource == "pods" {
			patchedCond = strings.Contains(string(pa.GetPatch()), `"reason":"DeletionByTaintManager"`)
		}
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			deleted = patchedCond
		}
	}
	if !patchedCond || !deleted {
		t.Errorf("pod DisruptionTarget patched=%v then deleted=%v; want both", patchedCond, deleted)
	}
}

func mustNode(t *testing.T, c *Controller, name string) *corev1.Node {
	n, err := c.nodes.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
