package agent

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batchlet/batchlet/runtime/sim"
)

type harness struct {
	t      *testing.T
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	sim    *sim.Runtime
	agent  *Agent
	cancel context.CancelFunc
	done   chan error

	mu            sync.Mutex
	statusPatches map[string]int
}

// newHarness starts an agent that writes statuses at once (no
// FirstStatusDelay), on the sim runtime and a fake clock.
func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, func(c *Config) { c.FirstStatusDelay = -1 })
}

func newHarnessWith(t *testing.T, configure func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, client: fake.NewClientset(), clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		statusPatches: map[string]int{}, done: make(chan error, 1)}
	// Like a real API server, refuse objects in a namespace that does not exist.
	h.client.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if _, err := h.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("namespaces"), "", a.GetNamespace()); err != nil {
			return true, nil, apierrors.NewNotFound(corev1.Resource("namespaces"), a.GetNamespace())
		}
		return false, nil, nil
	})
	h.client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() == "status" {
			h.mu.Lock()
			h.statusPatches[a.(k8stesting.PatchAction).GetName()]++
			h.mu.Unlock()
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.sim = sim.New(ctx, h.clock)
	cfg := Config{Client: h.client, NodeName: "node-1", Runtime: h.sim, Clock: h.clock, Port: -1,
		Logger: slog.New(slog.DiscardHandler), ShutdownGracePeriod: 2 * time.Second}
	configure(&cfg)
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.agent = a
	go func() { h.done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-h.done })
	h.eventually("node registered", func() bool {
		_, err := h.client.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
		return err == nil && a.podsInf.HasSynced()
	})
	return h
}

func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	h.t.Fatalf("timed out waiting for %s", what)
}

func (h *harness) pod(name string) *corev1.Pod {
	p, err := h.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return p
}

func (h *harness) create(p *corev1.Pod) {
	h.t.Helper()
	if _, err := h.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) waitPhase(name string, phase corev1.PodPhase) *corev1.Pod {
	h.t.Helper()
	var p *corev1.Pod
	h.eventually("pod "+name+" "+string(phase), func() bool {
		p = h.pod(name)
		return p != nil && p.Status.Phase == phase
	})
	return p
}

func boundPod(name string, ann map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: ann},
		Spec: corev1.PodSpec{NodeName: "node-1", RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	}
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func TestNodeAndLeaseRegistered(t *testing.T) {
	h := newHarness(t)
	node, err := h.client.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Status.Allocatable.Pods().Value() != 110 || node.Status.Capacity.Cpu().IsZero() {
		t.Fatalf("capacity %v allocatable %v", node.Status.Capacity, node.Status.Allocatable)
	}
	var ready *corev1.NodeCondition
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			ready = &node.Status.Conditions[i]
		}
	}
	if ready == nil || ready.Status != corev1.ConditionTrue || ready.Reason != "KubeletReady" {
		t.Fatalf("Ready condition %+v", ready)
	}
	if len(node.Status.Addresses) != 2 || node.Status.Addresses[0].Type != corev1.NodeInternalIP || node.Status.Addresses[0].Address != "127.0.0.1" {
		t.Fatalf("addresses %+v", node.Status.Addresses)
	}
	h.eventually("lease", func() bool {
		l, err := h.client.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), "node-1", metav1.GetOptions{})
		return err == nil && *l.Spec.HolderIdentity == "node-1" && l.Spec.RenewTime != nil
	})
	if _, err := h.client.CoreV1().Namespaces().Get(context.Background(), LeaseNamespace, metav1.GetOptions{}); err != nil {
		t.Fatalf("lease namespace not created: %v", err)
	}
}

func TestPodRunsToSuccess(t *testing.T) {
	h := newHarness(t)
	h.create(boundPod("p1", map[string]string{sim.DurationAnnotation: "5s"}))
	p := h.waitPhase("p1", corev1.PodRunning)
	if p.Status.PodIP == "" || p.Status.HostIP != "127.0.0.1" || p.Status.StartTime == nil {
		t.Fatalf("running status %+v", p.Status)
	}
	if c := condition(p, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("Ready %+v", c)
	}
	if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Running == nil || !cs[0].Ready {
		t.Fatalf("container statuses %+v", cs)
	}
	h.clock.Step(5 * time.Second)
	p = h.waitPhase("p1", corev1.PodSucceeded)
	if c := condition(p, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted" {
		t.Fatalf("Ready after success %+v", c)
	}
	if term := p.Status.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != "Completed" {
		t.Fatalf("terminated %+v", p.Status.ContainerStatuses[0].State)
	}
	if c := condition(p, corev1.PodScheduled); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("PodScheduled lost: %+v", p.Status.Conditions)
	}
	h.mu.Lock()
	n := h.statusPatches["p1"]
	h.mu.Unlock()
	if n != 2 {
		t.Fatalf("status patches = %d, want 2 (Running, Succeeded)", n)
	}
}

// A pod's first status waits FirstStatusDelay: a pod that ends within it is
// written once, terminal; one that runs on is written Running after it.
func TestFirstStatusHeldBack(t *testing.T) {
	h := newHarnessWith(t, func(c *Config) { c.FirstStatusDelay = time.Second })
	h.create(boundPod("quick", map[string]string{sim.DurationAnnotation: "500ms"}))
	h.create(boundPod("long", map[string]string{sim.DurationAnnotation: "1h"}))
	h.eventually("first statuses held", func() bool { return h.held("quick") && h.held("long") })
	if n := h.patches("quick") + h.patches("long"); n != 0 {
		t.Fatalf("%d status patches while held, want none", n)
	}
	h.clock.Step(500 * time.Millisecond)
	h.waitPhase("quick", corev1.PodSucceeded)
	if n := h.patches("quick"); n != 1 {
		t.Fatalf("quick pod: %d status patches, want 1 (Succeeded)", n)
	}
	if n := h.patches("long"); n != 0 {
		t.Fatalf("long pod: %d status patches before the delay, want none", n)
	}
	h.clock.Step(500 * time.Millisecond)
	h.waitPhase("long", corev1.PodRunning)
	if n := h.patches("long"); n != 1 {
		t.Fatalf("long pod: %d status patches, want 1 (Running)", n)
	}
}

// held reports whether the agent held back the first status of pod name.
func (h *harness) held(name string) bool {
	h.agent.mu.Lock()
	defer h.agent.mu.Unlock()
	st := h.agent.states["default/"+name]
	return st != nil && !st.heldSince.IsZero()
}

func (h *harness) patches(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.statusPatches[name]
}

func TestImmediateFailure(t *testing.T) {
	h := newHarness(t)
	h.create(boundPod("p2", map[string]string{sim.ExitCodeAnnotation: "42"}))
	p := h.waitPhase("p2", corev1.PodFailed)
	if term := p.Status.ContainerStatuses[0].State.Terminated; term.ExitCode != 42 || term.Reason != "Error" {
		t.Fatalf("terminated %+v", term)
	}
}

func TestGracefulDeletion(t *testing.T) {
	h := newHarness(t)
	h.create(boundPod("p3", map[string]string{sim.DurationAnnotation: "1h"}))
	p := h.waitPhase("p3", corev1.PodRunning)
	now := metav1.NewTime(h.clock.Now())
	grace := int64(30)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("pod deleted", func() bool {
		_, err := h.client.CoreV1().Pods("default").Get(context.Background(), "p3", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	var final *corev1.Pod
	for _, a := range h.client.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok && pa.GetName() == "p3" {
			_ = pa
		}
		if da, ok := a.(k8stesting.DeleteAction); ok && da.GetName() == "p3" {
			opts := da.GetDeleteOptions()
			if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 || opts.Preconditions == nil || *opts.Preconditions.UID != p.UID {
				t.Fatalf("delete options %+v", opts)
			}
		}
	}
	_ = final
	h.mu.Lock()
	n := h.statusPatches["p3"]
	h.mu.Unlock()
	if n < 2 {
		t.Fatalf("final status not written before delete: %d patches", n)
	}
}

func TestActiveDeadlineExceeded(t *testing.T) {
	h := newHarness(t)
	p := boundPod("p4", map[string]string{sim.DurationAnnotation: "1h"})
	ads := int64(3)
	p.Spec.ActiveDeadlineSeconds = &ads
	h.create(p)
	h.waitPhase("p4", corev1.PodRunning)
	h.clock.Step(3 * time.Second)
	got := h.waitPhase("p4", corev1.PodFailed)
	if got.Status.Reason != "DeadlineExceeded" || got.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Fatalf("reason %q message %q", got.Status.Reason, got.Status.Message)
	}
}

// A pod that ended before its activeDeadlineSeconds keeps its terminal
// status when the deadline passes.
func TestDeadlineAfterTheEndChangesNothing(t *testing.T) {
	h := newHarness(t)
	p := boundPod("p4b", map[string]string{sim.DurationAnnotation: "1s"})
	ads := int64(3)
	p.Spec.ActiveDeadlineSeconds = &ads
	h.create(p)
	h.waitPhase("p4b", corev1.PodRunning)
	h.clock.Step(time.Second)
	h.waitPhase("p4b", corev1.PodSucceeded)
	before := h.patches("p4b")
	h.clock.Step(2 * time.Second)
	// The deadline's sync comes before those of a pod created after it.
	h.eventually("queue drained", func() bool { return h.agent.queue.Len() == 0 })
	h.create(boundPod("p4c", map[string]string{sim.ExitCodeAnnotation: "0"}))
	h.waitPhase("p4c", corev1.PodSucceeded)
	got := h.pod("p4b")
	if got.Status.Phase != corev1.PodSucceeded || got.Status.Reason != "" || h.patches("p4b") != before {
		t.Fatalf("after the deadline: phase %s reason %q, %d status patches (was %d)", got.Status.Phase, got.Status.Reason, h.patches("p4b"), before)
	}
}

func TestShutdownMarksDisruptionTarget(t *testing.T) {
	h := newHarness(t)
	h.create(boundPod("p5", map[string]string{sim.DurationAnnotation: "1h"}))
	h.waitPhase("p5", corev1.PodRunning)
	h.cancel()
	<-h.done
	h.done <- nil // for the cleanup
	p := h.pod("p5")
	if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "Terminated" {
		t.Fatalf("phase %s reason %q", p.Status.Phase, p.Status.Reason)
	}
	c := condition(p, corev1.DisruptionTarget)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "TerminationByKubelet" {
		t.Fatalf("DisruptionTarget %+v", c)
	}
}

func TestEvictionConditionKept(t *testing.T) {
	h := newHarness(t)
	h.create(boundPod("p6", map[string]string{sim.DurationAnnotation: "1h"}))
	p := h.waitPhase("p6", corev1.PodRunning)
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
	if _, err := h.client.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(time.Hour)
	p = h.waitPhase("p6", corev1.PodSucceeded)
	if c := condition(p, corev1.DisruptionTarget); c == nil || c.Reason != "EvictionByEvictionAPI" {
		t.Fatalf("DisruptionTarget lost: %+v", p.Status.Conditions)
	}
}

func TestDeletedBeforeStartIsFailedThenDeleted(t *testing.T) {
	h := newHarness(t)
	p := boundPod("p7", nil)
	now := metav1.NewTime(h.clock.Now())
	grace := int64(30)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	h.create(p)
	h.eventually("pod deleted", func() bool { return h.pod("p7") == nil })
	var patched, deletedAfter bool
	for _, a := range h.client.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok && pa.GetName() == "p7" && pa.GetSubresource() == "status" {
			body := string(pa.GetPatch())
			patched = strings.Contains(body, `"phase":"Failed"`) && strings.Contains(body, `"reason":"ContainerStatusUnknown"`)
		}
		if da, ok := a.(k8stesting.DeleteAction); ok && da.GetName() == "p7" {
			deletedAfter = patched
		}
	}
	if !deletedAfter {
		t.Fatalf("want a Failed status patch before the delete; actions %v", h.client.Actions())
	}
}

func TestReadinessProbe(t *testing.T) {
	h := newHarness(t)
	p := boundPod("p8", map[string]string{sim.DurationAnnotation: "1h"})
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, InitialDelaySeconds: 5}
	h.create(p)
	got := h.waitPhase("p8", corev1.PodRunning)
	if c := condition(got, corev1.PodReady); c == nil || c.Status != corev1.ConditionFalse || c.Message != "containers with unready status: [main]" {
		t.Fatalf("before the probe: Ready %+v", c)
	}
	h.eventually("ready", func() bool {
		h.clock.Step(time.Second) // the probe runs 5s after the start
		p := h.pod("p8")
		c := condition(p, corev1.PodReady)
		return c != nil && c.Status == corev1.ConditionTrue && p.Status.ContainerStatuses[0].Ready
	})
}
