package jobset

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// inOrderStartup reports whether the (deprecated) InOrder startup policy is set.
func inOrderStartup(js *jobsetapi.JobSet) bool {
	return js.Spec.StartupPolicy != nil && js.Spec.StartupPolicy.StartupPolicyOrder == jobsetapi.InOrder
}

// allReplicasStarted reports whether every Job of a replicatedJob is ready,
// succeeded or failed.
func allReplicasStarted(replicas int32, s *jobsetapi.ReplicatedJobStatus) bool {
	if s == nil {
		return replicas == 0
	}
	return replicas == s.Failed+s.Ready+s.Succeeded
}

func (p *plan) setStartupInProgress(now time.Time) {
	p.setCondition(newCondition(corev1.EventTypeNormal, jobsetapi.JobSetStartupPolicyInProgress, metav1.ConditionTrue,
		reasonInOrderInProgress, messageInOrderInProgress), now)
}

func (p *plan) setStartupCompleted(now time.Time) {
	p.setCondition(newCondition(corev1.EventTypeNormal, jobsetapi.JobSetStartupPolicyCompleted, metav1.ConditionTrue,
		reasonInOrderCompleted, messageInOrderCompleted), now)
}
