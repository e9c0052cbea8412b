package agent

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// With a second node, /etc/hosts entries include the live pods of the other
// nodes that share the subdomain (JobSet pods spread over nodes).
func TestHostsIncludePeersOnOtherNodes(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	remote := func(name, ip string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec:       corev1.PodSpec{NodeName: "node-2", Hostname: name, Subdomain: "sd"},
			Status:     corev1.PodStatus{Phase: phase, PodIP: ip},
		}
	}
	for _, p := range []*corev1.Pod{remote("w-1", "127.4.0.1", corev1.PodRunning), remote("w-2", "127.4.0.2", corev1.PodSucceeded), remote("w-3", "", corev1.PodPending)} {
		if _, err := h.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	local := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: "default", UID: "uid-w-0"},
		Spec: corev1.PodSpec{NodeName: "node-1", Hostname: "w-0", Subdomain: "sd"}}
	r := &resolver{a: h.agent}
	if got := r.Hosts(local); len(got) != 0 {
		t.Fatalf("one node: hosts %v, want none (no cluster-wide watch)", got)
	}
	if _, err := h.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "[{127.4.0.1 [w-1.sd.default.svc.cluster.local w-1]}]"
	var got string
	h.eventually("peer on node-2 in hosts", func() bool {
		got = fmt.Sprint(r.Hosts(local))
		return got == want
	})
}

func TestPeerEntryChanged(t *testing.T) {
	base := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec:   corev1.PodSpec{NodeName: "n2", Subdomain: "sd"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.4.0.1"}}
	mod := func(f func(p *corev1.Pod)) *corev1.Pod { p := base.DeepCopy(); f(p); return p }
	for name, tc := range map[string]struct {
		n    *corev1.Pod
		want bool
	}{
		"status noise":   {mod(func(p *corev1.Pod) { p.Status.Conditions = []corev1.PodCondition{{Type: "Ready"}} }), false},
		"new IP":         {mod(func(p *corev1.Pod) { p.Status.PodIP = "127.4.0.9" }), true},
		"terminal":       {mod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), true},
		"being deleted":  {mod(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }), true},
		"hostname shown": {mod(func(p *corev1.Pod) { p.Spec.Hostname = "h" }), true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := peerEntryChanged(base, tc.n); got != tc.want {
				t.Fatalf("peerEntryChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
