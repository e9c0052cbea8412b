package scheduler

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func makeNode(name, cpu, mem string, pods int64) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
				corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

type podOpt func(*corev1.Pod)

func makePod(name, cpu string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(time.Unix(1000, 0))},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
	}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(n string) podOpt      { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func withPriority(v int32) podOpt { return func(p *corev1.Pod) { p.Spec.Priority = ptr.To(v) } }
func withSelector(k, v string) podOpt {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{k: v} }
}
func withToleration(t corev1.Toleration) podOpt {
	return func(p *corev1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, t) }
}
func withAffinity(reqs ...corev1.NodeSelectorRequirement) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}}},
		}}
	}
}

// infoFor builds a nodeInfo with the given pods counted.
func infoFor(node *corev1.Node, pods ...*corev1.Pod) (*nodeInfo, []*podEntry) {
	n := newNodeInfo()
	n.setNode(node)
	var entries []*podEntry
	for _, p := range pods {
		e := newPodEntry(p, false)
		n.addPod(e)
		entries = append(entries, e)
	}
	return n, entries
}
