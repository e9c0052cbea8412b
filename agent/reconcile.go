package agent

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// The node controller marks the pods of a silent node not ready. When the
// agent is alive after all (it was only slow), it puts the readiness it
// computes back, as the kubelet's status manager reconciles with the API.

// readinessReverted reports whether someone else changed the pod's Ready or
// ContainersReady condition after the agent's last write (writtenRV). A
// cache older than that write says nothing; unparsable resourceVersions
// never trigger a rewrite.
func readinessReverted(api *corev1.PodStatus, apiRV string, written *corev1.PodStatus, writtenRV string) bool {
	if written == nil || !rvAfter(apiRV, writtenRV) {
		return false
	}
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		if conditionStatus(api.Conditions, t) != conditionStatus(written.Conditions, t) {
			return true
		}
	}
	return false
}

// rvAfter reports whether resourceVersion a is later than b; both must be
// numbers (batchlet's are).
func rvAfter(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x > y
}

func conditionStatus(conds []corev1.PodCondition, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range conds {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}
