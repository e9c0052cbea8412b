package scheduler

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestFindNodeMessages(t *testing.T) {
	tainted := makeNode("tainted", "4", "4Gi", 110)
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	cordoned := makeNode("cordoned", "4", "4Gi", 110)
	cordoned.Spec.Unschedulable = true
	notReady := makeNode("notready", "4", "4Gi", 110)
	notReady.Status.Conditions[0].Status = corev1.ConditionUnknown
	labelled := makeNode("labelled", "4", "4Gi", 110)
	labelled.Labels["zone"] = "a"
	labelled.Labels["cores"] = "8"

	tests := map[string]struct {
		pod      *corev1.Pod
		nodes    []*corev1.Node
		existing []*corev1.Pod
		wantNode string
		wantMsg  string
	}{
		"fits": {pod: makePod("p", "1"), nodes: []*corev1.Node{makeNode("n1", "2", "1Gi", 110)}, wantNode: "n1"},
		// 30 best-effort pods score as 3 cores (100m each by default) on a
		// 1-core node: the score goes below -1, the node still fits.
		"overcommitted by scoring defaults still fits": {
			pod: makePod("p", ""), nodes: []*corev1.Node{makeNode("n1", "1", "1Gi", 110)},
			existing: bestEffortPods(30, "n1"),
			wantNode: "n1",
		},
		"insufficient cpu": {
			pod: makePod("p", "3"), nodes: []*corev1.Node{makeNode("n1", "2", "1Gi", 110)},
			wantMsg: "0/1 nodes are available: 1 Insufficient cpu.",
		},
		"existing pods count": {
			pod: makePod("p", "1500m"), nodes: []*corev1.Node{makeNode("n1", "2", "1Gi", 110)},
			existing: []*corev1.Pod{makePod("q", "1", onNode("n1"))},
			wantMsg:  "0/1 nodes are available: 1 Insufficient cpu.",
		},
		"too many pods": {
			pod: makePod("p", ""), nodes: []*corev1.Node{makeNode("n1", "2", "1Gi", 1)},
			existing: []*corev1.Pod{makePod("q", "", onNode("n1"))},
			wantMsg:  "0/1 nodes are available: 1 Too many pods.",
		},
		"taint, cordon, not ready and selector, sorted": {
			pod:     makePod("p", "", withSelector("zone", "b")),
			nodes:   []*corev1.Node{tainted, cordoned, notReady, labelled},
			wantMsg: "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable.",
		},
		"toleration lets the pod on the tainted node": {
			pod:      makePod("p", "", withToleration(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule})),
			nodes:    []*corev1.Node{tainted, cordoned},
			wantNode: "tainted",
		},
		"exists toleration with empty key tolerates everything": {
			pod:      makePod("p", "", withToleration(corev1.Toleration{Operator: corev1.TolerationOpExists})),
			nodes:    []*corev1.Node{notReady},
			wantNode: "notready",
		},
		"affinity In and Gt": {
			pod: makePod("p", "", withAffinity(
				corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}},
				corev1.NodeSelectorRequirement{Key: "cores", Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}})),
			nodes: []*corev1.Node{makeNode("plain", "4", "4Gi", 110), labelled}, wantNode: "labelled",
		},
		"affinity Lt and DoesNotExist reject": {
			pod: makePod("p", "", withAffinity(
				corev1.NodeSelectorRequirement{Key: "cores", Operator: corev1.NodeSelectorOpLt, Values: []string{"4"}})),
			nodes:   []*corev1.Node{labelled},
			wantMsg: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
		},
		"affinity NotIn and DoesNotExist accept": {
			pod: makePod("p", "", withAffinity(
				corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"b"}},
				corev1.NodeSelectorRequirement{Key: "gpu", Operator: corev1.NodeSelectorOpDoesNotExist},
				corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpExists})),
			nodes: []*corev1.Node{labelled}, wantNode: "labelled",
		},
		"best-effort pods spread: missing requests score as 100m and 200Mi": {
			pod:      makePod("p", ""),
			nodes:    []*corev1.Node{makeNode("a", "2", "1Gi", 110), makeNode("b", "2", "1Gi", 110)},
			existing: []*corev1.Pod{makePod("q", "", onNode("a"))},
			wantNode: "b",
		},
		"least allocated node wins": {
			pod:      makePod("p", "1"),
			nodes:    []*corev1.Node{makeNode("a", "2", "1Gi", 110), makeNode("b", "8", "1Gi", 110)},
			wantNode: "b",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var infos []*nodeInfo
			for _, n := range tc.nodes {
				var on []*corev1.Pod
				for _, p := range tc.existing {
					if p.Spec.NodeName == n.Name {
						on = append(on, p)
					}
				}
				info, _ := infoFor(n, on...)
				infos = append(infos, info)
			}
			fit := findNode(tc.pod, podRequests(tc.pod), infos)
			if fit.node != tc.wantNode {
				t.Fatalf("node = %q, want %q", fit.node, tc.wantNode)
			}
			if tc.wantNode == "" {
				if got := fitErrorMessage(len(infos), fit.reasons, ""); got != tc.wantMsg {
					t.Errorf("message\n got: %s\nwant: %s", got, tc.wantMsg)
				}
			}
		})
	}
}

func TestPreemptionMessages(t *testing.T) {
	got := fitErrorMessage(1, histogram{"Insufficient cpu": 1}, preemptionMessage(1, preemptionReasons(1, 1)))
	want := "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.."
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got = fitErrorMessage(2, histogram{"Insufficient cpu": 1, "node(s) were unschedulable": 1}, preemptionMessage(2, preemptionReasons(2, 1)))
	want = "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.."
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestPodRequests(t *testing.T) {
	p := makePod("p", "500m")
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}})
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	if got := podRequests(p); got.milliCPU != 2100 || got.pods != 1 {
		t.Errorf("podRequests = %+v, want 2100m cpu (init peak + overhead) and 1 pod", got)
	}
}

func TestSelectVictims(t *testing.T) {
	node := makeNode("n", "4", "4Gi", 110)
	low1 := makePod("low1", "1", onNode("n"), withPriority(1))
	low2 := makePod("low2", "2", onNode("n"), withPriority(2))
	high := makePod("high", "1", onNode("n"), withPriority(100))
	info, entries := infoFor(node, low1, low2, high)

	victims, ok := selectVictims(makePod("p", "2", withPriority(10)), podRequests(makePod("p", "2")), info, entries)
	if !ok || len(victims) != 1 || victims[0].Name != "low2" {
		t.Errorf("victims = %v, %v; want only low2 (low1 is reprieved, high is untouchable)", names(victims), ok)
	}
	if _, ok := selectVictims(makePod("p", "4", withPriority(10)), podRequests(makePod("p", "4")), info, entries); ok {
		t.Error("preemption should not help when higher-priority pods alone overflow the node")
	}
	if _, ok := selectVictims(makePod("p", "2"), podRequests(makePod("p", "2")), info, entries); ok {
		t.Error("priority-0 pod must not find victims among higher-priority pods")
	}
}

func names(ps []*corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func bestEffortPods(n int, node string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, makePod(fmt.Sprintf("be-%d", i), "", onNode(node)))
	}
	return out
}
