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
)

// The node controller records RegisteredNode when it first sees a node and
// NodeNotReady when a Ready node stops posting status, as upstream.
func TestNodeControllerEvents(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n1"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: LeaseNamespace, Name: "n1"}}
	client := fake.NewClientset(node, lease)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(client, factory, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Options{})
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
