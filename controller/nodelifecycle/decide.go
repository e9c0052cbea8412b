package nodelifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Taint keys and messages, as upstream.
const (
	TaintNotReady    = "node.kubernetes.io/not-ready"
	TaintUnreachable = "node.kubernetes.io/unreachable"

	reasonNodeStatusUnknown = "NodeStatusUnknown"
	messageStoppedPosting   = "Kubelet stopped posting node status."
	ReasonDeletionByTaint   = "DeletionByTaintManager"
	messageTaintEviction    = "Taint manager: deleting due to NoExecute taint"
)

// conditionsMarkedUnknown are the node conditions set to Unknown when the
// heartbeat stops.
var conditionsMarkedUnknown = []corev1.NodeConditionType{
	corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure,
}

// heartbeatLost reports whether the last renewal seen is older than grace.
func heartbeatLost(lastProbe, now time.Time, grace time.Duration) bool {
	return now.Sub(lastProbe) > grace
}

// unknownConditions returns the node's conditions with the heartbeat ones set
// to Unknown; changed is false when they all already were.
func unknownConditions(node *corev1.Node, now metav1.Time) (conds []corev1.NodeCondition, changed bool) {
	byType := map[corev1.NodeConditionType]corev1.NodeCondition{}
	for _, c := range node.Status.Conditions {
		byType[c.Type] = c
	}
	for _, t := range conditionsMarkedUnknown {
		c, ok := byType[t]
		if ok && c.Status == corev1.ConditionUnknown {
			continue
		}
		c.Type, c.Status, c.Reason, c.Message = t, corev1.ConditionUnknown, reasonNodeStatusUnknown, messageStoppedPosting
		c.LastTransitionTime = now
		if !ok {
			c.LastHeartbeatTime = now
		}
		conds = append(conds, c)
		changed = true
	}
	return conds, changed
}

func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// desiredTaints returns the node's taints with the not-ready/unreachable
// ones matching its Ready condition (NoSchedule and NoExecute).
func desiredTaints(node *corev1.Node, now metav1.Time) []corev1.Taint {
	var want string
	switch readyStatus(node) {
	case corev1.ConditionFalse:
		want = TaintNotReady
	case corev1.ConditionUnknown:
		want = TaintUnreachable
	}
	var out []corev1.Taint
	have := map[corev1.TaintEffect]bool{}
	for _, t := range node.Spec.Taints {
		if t.Key == TaintNotReady || t.Key == TaintUnreachable {
			if t.Key != want {
				continue
			}
			have[t.Effect] = true
		}
		out = append(out, t)
	}
	if want == "" {
		return out
	}
	if !have[corev1.TaintEffectNoSchedule] {
		out = append(out, corev1.Taint{Key: want, Effect: corev1.TaintEffectNoSchedule})
	}
	if !have[corev1.TaintEffectNoExecute] {
		out = append(out, corev1.Taint{Key: want, Effect: corev1.TaintEffectNoExecute, TimeAdded: &now})
	}
	return out
}

// evictionDue decides the taint manager's verdict for one pod: evict now,
// evict at a later time (tolerationSeconds), or never.
func evictionDue(pod *corev1.Pod, taints []corev1.Taint, now time.Time) (evictNow bool, at time.Time, never bool) {
	never = true
	for _, t := range taints {
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		tol, ok := matchingToleration(pod.Spec.Tolerations, t)
		if !ok {
			return true, now, false
		}
		if tol.TolerationSeconds == nil {
			continue
		}
		added := now
		if t.TimeAdded != nil {
			added = t.TimeAdded.Time
		}
		deadline := added.Add(time.Duration(max(*tol.TolerationSeconds, 0)) * time.Second)
		if never || deadline.Before(at) {
			at = deadline
		}
		never = false
	}
	if never {
		return false, time.Time{}, true
	}
	return !now.Before(at), at, false
}

// matchingToleration finds the toleration of t with the shortest
// tolerationSeconds (nil meaning forever).
func matchingToleration(tols []corev1.Toleration, t corev1.Taint) (corev1.Toleration, bool) {
	var best corev1.Toleration
	found := false
	for _, tol := range tols {
		if !tolerates(tol, t) {
			continue
		}
		if !found || shorter(tol, best) {
			best, found = tol, true
		}
	}
	return best, found
}

func shorter(a, b corev1.Toleration) bool {
	if a.TolerationSeconds == nil {
		return false
	}
	return b.TolerationSeconds == nil || *a.TolerationSeconds < *b.TolerationSeconds
}

func tolerates(tol corev1.Toleration, t corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != t.Key {
		return false
	}
	if tol.Operator == corev1.TolerationOpExists {
		return true
	}
	return (tol.Operator == "" || tol.Operator == corev1.TolerationOpEqual) && tol.Value == t.Value
}
