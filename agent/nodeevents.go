package agent

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Node events, as the kubelet records them against its node.

const (
	reasonStarting          = "Starting"
	messageStarting         = "Starting kubelet."
	reasonAllocatable       = "NodeAllocatableEnforced"
	messageAllocatable      = "Updated Node Allocatable limit across pods"
	nodeStatusMessageFormat = "Node %s status is now: %s"
)

// nodeRef is how the kubelet refers to its node in events: the node name
// doubles as the UID.
func (a *Agent) nodeRef() *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", Name: a.cfg.NodeName, UID: types.UID(a.cfg.NodeName)}
}

// conditionEvent is the event reason the kubelet records when a node
// condition appears or changes to status; "" for none.
func conditionEvent(t corev1.NodeConditionType, s corev1.ConditionStatus) string {
	switch {
	case t == corev1.NodeMemoryPressure && s == corev1.ConditionFalse:
		return "NodeHasSufficientMemory"
	case t == corev1.NodeMemoryPressure && s == corev1.ConditionTrue:
		return "NodeHasInsufficientMemory"
	case t == corev1.NodeDiskPressure && s == corev1.ConditionFalse:
		return "NodeHasNoDiskPressure"
	case t == corev1.NodeDiskPressure && s == corev1.ConditionTrue:
		return "NodeHasDiskPressure"
	case t == corev1.NodePIDPressure && s == corev1.ConditionFalse:
		return "NodeHasSufficientPID"
	case t == corev1.NodePIDPressure && s == corev1.ConditionTrue:
		return "NodeHasInsufficientPID"
	case t == corev1.NodeReady && s == corev1.ConditionTrue:
		return "NodeReady"
	case t == corev1.NodeReady && s == corev1.ConditionFalse:
		return "NodeNotReady"
	}
	return ""
}

// conditionEvents lists the events for the conditions that are new in next
// or changed status since old, in next's order.
func conditionEvents(old, next []corev1.NodeCondition) []string {
	var out []string
	for _, c := range next {
		changed := true
		for _, o := range old {
			if o.Type == c.Type {
				changed = o.Status != c.Status
			}
		}
		if r := conditionEvent(c.Type, c.Status); changed && r != "" {
			out = append(out, r)
		}
	}
	return out
}

// recordStarting records the events of an agent start.
func (a *Agent) recordStarting() {
	a.recorder.Event(a.nodeRef(), corev1.EventTypeNormal, reasonStarting, messageStarting)
	a.recorder.Event(a.nodeRef(), corev1.EventTypeNormal, reasonAllocatable, messageAllocatable)
}

// recordConditionEvents records the status events between two node statuses.
func (a *Agent) recordConditionEvents(old, next []corev1.NodeCondition) {
	for _, r := range conditionEvents(old, next) {
		a.recorder.Eventf(a.nodeRef(), corev1.EventTypeNormal, r, nodeStatusMessageFormat, a.cfg.NodeName, r)
	}
}
