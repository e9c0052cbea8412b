package nodelifecycle

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

// The node controller records RegisteredNode when it first sees a node;
// when a Ready node stops posting status it records NodeNotReady and marks
// the node's ready pods not ready, as upstream.
func TestNodeControllerEvents(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n1"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: LeaseNamespace, Name: "n1"}}
	ready := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ready", UID: "uid-ready"}, Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	client := fake.NewClientset(node, lease, ready)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(controllerctx.Context{Client: client, Informers: factory, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: prometheus.NewRegistry()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(10)
	c.nodeEvents = rec
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), c.synced...)
	expectEvent(t, rec, "Normal RegisteredNode Node n1 event: Registered Node n1 in Controller")
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Step(DefaultGracePeriod + time.Second)
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, rec, "Normal NodeNotReady Node n1 status is now: NodeNotReady")
	expectEvent(t, rec, "Warning NodeNotReady Node is not ready")
	p, err := client.CoreV1().Pods("ns").Get(ctx, "ready", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Status != corev1.ConditionFalse || !p.Status.Conditions[0].LastTransitionTime.Equal(&metav1.Time{Time: clk.Now()}) {
		t.Errorf("pod conditions after the node went silent: %+v", p.Status.Conditions)
	}
	select {
	case e := <-rec.Events:
		t.Errorf("unexpected event %q", e)
	default:
	}
}

func expectEvent(t *testing.T, rec *record.FakeRecorder, want string) {
	t.Helper()
	select {
	case got := <-rec.Events:
		if got != want {
			t.Fatalf("event %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no event %q", want)
	}
}

func TestPodsToMarkNotReady(t *testing.T) {
	pod := func(name, node string, ready corev1.ConditionStatus) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node}}
		if ready != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
		}
		return p
	}
	got := podsToMarkNotReady([]*corev1.Pod{pod("a", "n1", "True"), pod("b", "n1", "False"), pod("c", "n2", "True"), pod("d", "n1", "")}, "n1")
	if len(got) != 1 || got[0].Name != "a" {
		t.Fatalf("pods to mark = %v, want only a", got)
	}
}
