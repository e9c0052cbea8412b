package scheduler

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

// bindReactor gives the fake clientset the binding subresource: it sets
// spec.nodeName and the PodScheduled=True condition like the API server.
func bindReactor(client *fake.Clientset) k8stesting.ReactionFunc {
	return func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := action.(k8stesting.CreateAction).GetObject().(*corev1.Binding)
		obj, err := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod).DeepCopy()
		pod.Spec.NodeName = b.Target.Name
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		return true, b, client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, b.Namespace)
	}
}

func startScheduler(t *testing.T, objs ...runtime.Object) *fake.Clientset {
	t.Helper()
	client := fake.NewClientset(objs...)
	client.PrependReactor("create", "pods", bindReactor(client))
	factory := informers.NewSharedInformerFactory(client, 0)
	s, err := New(controllerctx.Context{Client: client, Informers: factory, Clock: clocktesting.NewFakeClock(time.Now()),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx, 1) }()
	t.Cleanup(func() { cancel(); <-done })
	return client
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("never saw: %s", what)
	}
}

func getPod(t *testing.T, c *fake.Clientset, name string) *corev1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods("ns").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return p
}

func podCondition(p *corev1.Pod, ct corev1.PodConditionType) *corev1.PodCondition {
	if p == nil {
		return nil
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == ct {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func hasEvent(t *testing.T, c *fake.Clientset, reason, note string) bool {
	t.Helper()
	evs, err := c.EventsV1().Events("ns").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == reason && e.Note == note && e.ReportingController == Name {
			return true
		}
	}
	return false
}

func TestBindsUntilFullThenRetriesWhenRoomFrees(t *testing.T) {
	c := startScheduler(t, makeNode("n1", "2", "1Gi", 110), makePod("p1", "1"), makePod("p2", "1"), makePod("p3", "1"))
	eventually(t, "p3 marked unschedulable", func() bool {
		cond := podCondition(getPod(t, c, "p3"), corev1.PodScheduled)
		return cond != nil && cond.Reason == corev1.PodReasonUnschedulable
	})
	// Binds are written asynchronously; p3's condition can land first.
	eventually(t, "p1 and p2 bound (the assume cache must account them)", func() bool {
		return getPod(t, c, "p1").Spec.NodeName == "n1" && getPod(t, c, "p2").Spec.NodeName == "n1"
	})
	wantMsg := "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.."
	if cond := podCondition(getPod(t, c, "p3"), corev1.PodScheduled); cond.Message != wantMsg || cond.Status != corev1.ConditionFalse {
		t.Errorf("p3 condition = %+v, want False with %q", cond, wantMsg)
	}
	eventually(t, "FailedScheduling event", func() bool { return hasEvent(t, c, "FailedScheduling", wantMsg) })
	eventually(t, "Scheduled event", func() bool { return hasEvent(t, c, "Scheduled", "Successfully assigned ns/p1 to n1") })

	if err := c.CoreV1().Pods("ns").Delete(t.Context(), "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "p3 bound after p1 left", func() bool { return getPod(t, c, "p3").Spec.NodeName == "n1" })
}

func TestPreemptsLowerPriorityPod(t *testing.T) {
	c := startScheduler(t, makeNode("n1", "2", "1Gi", 110),
		makePod("low", "2", onNode("n1"), withPriority(1)),
		makePod("high", "2", withPriority(1000)))
	eventually(t, "victim deleted", func() bool { return getPod(t, c, "low") == nil })
	eventually(t, "preemptor bound", func() bool { return getPod(t, c, "high").Spec.NodeName == "n1" })
	if p := getPod(t, c, "high"); p.Status.NominatedNodeName != "n1" {
		t.Errorf("nominatedNodeName = %q, want n1", p.Status.NominatedNodeName)
	}
	var sawDisruption bool
	for _, a := range c.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok && pa.GetName() == "low" && pa.GetSubresource() == "status" {
			patch := string(pa.GetPatch())
			sawDisruption = strings.Contains(patch, `"type":"DisruptionTarget","status":"True"`) &&
				strings.Contains(patch, `"reason":"PreemptionByScheduler"`) &&
				strings.Contains(patch, `"message":"default-scheduler: preempting to accommodate a higher priority pod"`)
		}
	}
	if !sawDisruption {
		t.Error("victim never got DisruptionTarget=True reason PreemptionByScheduler")
	}
}

func TestSchedulingGatedPodWaits(t *testing.T) {
	gated := makePod("gated", "")
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
	c := startScheduler(t, makeNode("n1", "2", "1Gi", 110), gated)
	eventually(t, "SchedulingGated condition", func() bool {
		cond := podCondition(getPod(t, c, "gated"), corev1.PodScheduled)
		return cond != nil && cond.Reason == corev1.PodReasonSchedulingGated && cond.Message == msgGated
	})
	p := getPod(t, c, "gated")
	p.Spec.SchedulingGates = nil
	if _, err := c.CoreV1().Pods("ns").Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bound once ungated", func() bool { return getPod(t, c, "gated").Spec.NodeName == "n1" })
}
