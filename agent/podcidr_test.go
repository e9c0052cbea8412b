package agent

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/batchlet/batchlet/runtime/sim"
)

func TestPodCIDRBlocks(t *testing.T) {
	node := func(name, cidr string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr}}
	}
	for name, tc := range map[string]struct {
		nodes []corev1.Node
		want  int
	}{
		"first node":                 {nil, 0},
		"next free":                  {[]corev1.Node{node("a", "127.0.0.0/14"), node("b", "127.4.0.0/14")}, 2},
		"gap reused":                 {[]corev1.Node{node("a", "127.0.0.0/14"), node("c", "127.8.0.0/14")}, 1},
		"own old block is not taken": {[]corev1.Node{node("self", "127.0.0.0/14")}, 0},
		"foreign cidrs ignored":      {[]corev1.Node{node("a", "10.244.0.0/24"), node("b", "127.1.0.0/16")}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			if got := pickPodCIDRBlock("self", tc.nodes); got != tc.want {
				t.Fatalf("block = %d, want %d", got, tc.want)
			}
		})
	}
	var all []corev1.Node
	for b := range podCIDRBlocks {
		all = append(all, node(podCIDRString(b), podCIDRString(b)))
	}
	if got := pickPodCIDRBlock("self", all); got != -1 {
		t.Errorf("all blocks taken: block = %d, want -1", got)
	}
	for b, want := range map[int][2]string{0: {"127.1.0.1", "127.3.255.254"}, 1: {"127.4.0.1", "127.7.255.254"}, 63: {"127.252.0.1", "127.255.255.254"}} {
		first, last := blockRange(b)
		if toIP(first) != want[0] || toIP(last) != want[1] {
			t.Errorf("block %d range %s-%s, want %s-%s", b, toIP(first), toIP(last), want[0], want[1])
		}
		if podCIDRBlock(podCIDRString(b)) != b {
			t.Errorf("podCIDRBlock(%s) != %d", podCIDRString(b), b)
		}
	}
}

// Two agents on one host register with distinct pod CIDRs and hand out pod
// IPs from them.
func TestAgentsGetDistinctPodCIDRs(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ips []string
	for _, name := range []string{"node-a", "node-b"} {
		a, err := New(Config{Client: client, NodeName: name, Runtime: sim.New(ctx, nil), Port: -1, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.registerNode(ctx); err != nil {
			t.Fatal(err)
		}
		ip, err := a.cfg.PodIPs.Allocate(types.UID("pod-on-"+name), "")
		if err != nil {
			t.Fatal(err)
		}
		ips = append(ips, ip)
	}
	for name, want := range map[string]string{"node-a": "127.0.0.0/14", "node-b": "127.4.0.0/14"} {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Spec.PodCIDR != want || len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDRs[0] != want {
			t.Errorf("%s podCIDR %q %v, want %s", name, n.Spec.PodCIDR, n.Spec.PodCIDRs, want)
		}
	}
	if ips[0] != "127.1.0.1" || !strings.HasPrefix(ips[1], "127.4.") {
		t.Errorf("first pod IPs %v, want 127.1.0.1 and one in 127.4.0.0/14", ips)
	}
}
