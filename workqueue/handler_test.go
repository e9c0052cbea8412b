package workqueue

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// harness is a Manager over fake clients with one queue of a Job "j"
// made from a ConfigMap, and the handlers of pods a and b.
type harness struct {
	m      *Manager
	kube   *fake.Clientset
	clock  *clocktesting.FakePassiveClock
	served map[string]http.Handler
}

func newHarness(t *testing.T, items string) *harness {
	t.Helper()
	kube := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "uid-b"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), map[schema.GroupVersionResource]string{GVR: "WorkQueueList"})
	h := &harness{kube: kube, clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), served: map[string]http.Handler{}}
	h.m = NewManager(Config{Client: dyn, Kube: kube, Clock: h.clock, Logger: slog.New(slog.DiscardHandler), Key: []byte("k")})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"list": items}}
	get := func(context.Context, string, string) (*corev1.ConfigMap, error) { return cm, nil }
	job := &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "job-uid"}
	if err := h.m.ensureQueue(context.Background(), "ns", job, Source{ConfigMap: "cm", Key: "list"}, get); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Pod{podA, podB} {
		ps := &podServer{pod: p, namespace: "ns", queue: "j", srv: &http.Server{}}
		h.m.pods[types.UID(p.UID)] = ps
		h.served[p.Name] = h.m.handler(ps, h.m.token(types.UID(p.UID)))
	}
	return h
}

// call POSTs (or GETs, for "") op as pod and returns code, lease and body.
func (h *harness) call(t *testing.T, pod, op string) (int, string, string) {
	t.Helper()
	method := http.MethodPost
	if op == "" {
		method = http.MethodGet
	}
	token := h.m.token(types.UID("uid-" + pod))
	r := httptest.NewRequest(method, "/queue/"+token+"/"+op, nil)
	w := httptest.NewRecorder()
	h.served[pod].ServeHTTP(w, r)
	body, _ := io.ReadAll(w.Result().Body)
	return w.Code, w.Header().Get(HeaderLease), string(body)
}

func TestHandlerFinePattern(t *testing.T) {
	h := newHarness(t, "x\ny\n")
	type want struct {
		pod, op string
		code    int
		lease   string
		body    string
	}
	for i, s := range []want{
		{"a", "lease", 200, "0.1", "x"},
		{"b", "lease", 200, "1.2", "y"},
		{"a", "lease", 503, "", "no free item: 2 leased to running pods; retry\n"},
		{"b", "complete/0.1", 403, "", "lease \"0.1\" is pod a's: lease held by another pod\n"},
		{"a", "complete/0.1", 200, "", ""},
		{"a", "complete/0.1", 410, "", "lease \"0.1\": lease gone: it was completed or released (the item may be leased again)\n"},
		{"b", "complete/1.2", 200, "", ""},
		{"a", "lease", 204, "", ""},
		{"a", "", 200, "", `{"queue":"ns/j","items":2,"completed":2,"leased":0,"pending":0}` + "\n"},
		{"a", "bogus", 404, "", "not found: POST lease, complete/LEASE or release/LEASE\n"},
	} {
		code, lease, body := h.call(t, s.pod, s.op)
		if code != s.code || lease != s.lease || body != s.body {
			t.Errorf("step %d: %s %s = %d %q %q, want %d %q %q", i, s.pod, s.op, code, lease, body, s.code, s.lease, s.body)
		}
	}
}

func TestHandlerRefusesAnotherToken(t *testing.T) {
	h := newHarness(t, "x\n")
	r := httptest.NewRequest(http.MethodPost, "/queue/"+h.m.token("uid-b")+"/lease", nil)
	w := httptest.NewRecorder()
	h.served["a"].ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Errorf("pod a's API with pod b's token = %d, want 403", w.Code)
	}
}

// TestEndedPodsLeasesReturn: the leases of a pod that ended go back, by
// the agent's word (PodEnded) or, for a pod no agent watches any more,
// found by the next lease request that finds no free item.
func TestEndedPodsLeasesReturn(t *testing.T) {
	h := newHarness(t, "x\ny\n")
	if code, _, _ := h.call(t, "a", "lease"); code != 200 {
		t.Fatalf("lease = %d", code)
	}
	h.m.PodEnded(context.Background(), "uid-a")
	code, lease, body := h.call(t, "b", "lease")
	if code != 200 || lease != "0.2" || body != "x" {
		t.Fatalf("after pod a ended: lease = %d %q %q, want 200 0.2 x", code, lease, body)
	}

	// Pod b fails while no agent serves it: its lease is found on a sweep.
	if code, lease, _ := h.call(t, "b", "lease"); code != 200 || lease != "1.3" {
		t.Fatalf("lease = %d %q", code, lease)
	}
	delete(h.m.pods, "uid-b")
	pod, _ := h.kube.CoreV1().Pods("ns").Get(context.Background(), "b", metav1.GetOptions{})
	pod.Status.Phase = corev1.PodFailed
	if _, err := h.kube.CoreV1().Pods("ns").UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.m.pods["uid-a"] = &podServer{pod: podA, namespace: "ns", queue: "j"} // a is served again (a new pod, say)
	h.clock.SetTime(h.clock.Now().Add(sweepInterval))
	if code, lease, _ := h.call(t, "a", "lease"); code != 200 || lease != "0.4" {
		t.Fatalf("after pod b failed: lease = %d %q, want 200 0.4", code, lease)
	}
	if code, lease, _ := h.call(t, "a", "lease"); code != 200 || lease != "1.5" {
		t.Fatalf("lease = %d %q, want 200 1.5", code, lease)
	}
}
