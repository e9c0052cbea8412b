package scheduler

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// matchesNodeSelectorAndAffinity checks spec.nodeSelector and the required
// node affinity terms (ORed terms, ANDed expressions and fields).
func matchesNodeSelectorAndAffinity(pod *corev1.Pod, node *corev1.Node) bool {
	if len(pod.Spec.NodeSelector) > 0 && !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if termMatches(term, node) {
			return true
		}
	}
	return false
}

// termMatches: an empty term matches nothing, as upstream.
func termMatches(term corev1.NodeSelectorTerm, node *corev1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, e := range term.MatchExpressions {
		if !requirementMatches(e, node.Labels) {
			return false
		}
	}
	for _, e := range term.MatchFields {
		if !fieldMatches(e, node) {
			return false
		}
	}
	return true
}

func requirementMatches(e corev1.NodeSelectorRequirement, nodeLabels map[string]string) bool {
	v, has := nodeLabels[e.Key]
	switch e.Operator {
	case corev1.NodeSelectorOpIn:
		return has && contains(e.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !has || !contains(e.Values, v)
	case corev1.NodeSelectorOpExists:
		return has
	case corev1.NodeSelectorOpDoesNotExist:
		return !has
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		return has && len(e.Values) == 1 && compareInts(e.Operator, v, e.Values[0])
	}
	return false
}

func compareInts(op corev1.NodeSelectorOperator, label, bound string) bool {
	l, err1 := strconv.ParseInt(label, 10, 64)
	b, err2 := strconv.ParseInt(bound, 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	if op == corev1.NodeSelectorOpGt {
		return l > b
	}
	return l < b
}

// fieldMatches supports metadata.name, the only node field upstream allows.
func fieldMatches(e corev1.NodeSelectorRequirement, node *corev1.Node) bool {
	if e.Key != "metadata.name" {
		return false
	}
	set := fields.Set{"metadata.name": node.Name}
	switch e.Operator {
	case corev1.NodeSelectorOpIn:
		return contains(e.Values, set[e.Key])
	case corev1.NodeSelectorOpNotIn:
		return !contains(e.Values, set[e.Key])
	}
	return false
}

func contains(vals []string, v string) bool {
	for _, x := range vals {
		if x == v {
			return true
		}
	}
	return false
}
