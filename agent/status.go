package agent

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batchlet/batchlet/runtime"
)

// Condition reasons and messages the kubelet uses.
const (
	reasonContainersNotInitialized = "ContainersNotInitialized"
	reasonContainersNotReady       = "ContainersNotReady"
	reasonPodCompleted             = "PodCompleted"
	reasonPodFailed                = "PodFailed"
	reasonDeadlineExceeded         = "DeadlineExceeded"
	messageDeadlineExceeded        = "Pod was active on the node longer than the specified deadline"
	reasonTerminationByKubelet     = "TerminationByKubelet"
	messageNodeShutdown            = "Pod was terminated in response to imminent node shutdown."
	reasonNodeShutdown             = "Terminated"
)

// statusInput is everything podStatus decides from.
type statusInput struct {
	spec *corev1.PodSpec
	// old is the status the new one goes on from (conditions keep their
	// lastTransitionTime); podStatus only reads it.
	old      *corev1.PodStatus
	rt       runtime.PodStatus
	started  bool            // the runtime has the pod
	ready    map[string]bool // readiness probe results by container; absent: no probe
	terminal bool            // the agent is terminating the pod (deletion, deadline, shutdown)
	reason   string          // pod status reason for a terminal pod, e.g. DeadlineExceeded
	message  string
	// disruption, when set, is the message of a DisruptionTarget
	// (TerminationByKubelet) condition: node shutdown, or containers lost
	// with the previous agent process.
	disruption string
	hostIP     string
	podIP      string
	startTime  metav1.Time
	now        metav1.Time
}

// podStatus computes the pod status the kubelet would write.
func podStatus(in statusInput) corev1.PodStatus {
	old := in.old
	st := corev1.PodStatus{
		HostIP:    in.hostIP,
		HostIPs:   []corev1.HostIP{{IP: in.hostIP}},
		PodIP:     in.podIP,
		PodIPs:    []corev1.PodIP{{IP: in.podIP}},
		StartTime: &in.startTime,
		QOSClass:  old.QOSClass,
		Reason:    old.Reason,
		Message:   old.Message,
	}
	st.InitContainerStatuses = in.rt.InitContainerStatuses
	st.ContainerStatuses = markReady(in.rt.ContainerStatuses, in.spec, in.ready)
	podIsTerminal := in.terminal && in.rt.Done
	st.Phase = podPhase(in.spec, st.InitContainerStatuses, st.ContainerStatuses, podIsTerminal)
	if podIsTerminal && (in.reason != "" || st.Phase != corev1.PodSucceeded) {
		st.Phase = corev1.PodFailed
	}
	if in.reason != "" {
		st.Reason, st.Message = in.reason, in.message
	}
	conds := []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: boolStatus(in.started && !podIsTerminal)},
		initializedCondition(in.spec, st.InitContainerStatuses, st.ContainerStatuses, st.Phase),
	}
	cr := containersReadyCondition(in.spec, st.ContainerStatuses, st.Phase)
	ready := cr
	ready.Type = corev1.PodReady
	conds = append(conds, ready, cr)
	if !hasCondition(old.Conditions, corev1.PodScheduled) {
		conds = append(conds, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
	}
	if in.disruption != "" {
		conds = append(conds, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: reasonTerminationByKubelet, Message: in.disruption})
	}
	st.Conditions = mergeConditions(old.Conditions, conds, in.now)
	return st
}

// markReady sets Ready on running containers: from the readiness probe when
// there is one, true otherwise.
func markReady(statuses []corev1.ContainerStatus, spec *corev1.PodSpec, ready map[string]bool) []corev1.ContainerStatus {
	for i := range statuses {
		cs := &statuses[i]
		if cs.State.Running == nil {
			cs.Ready = false
			continue
		}
		if r, ok := ready[cs.Name]; ok {
			cs.Ready = r
		} else {
			cs.Ready = !hasReadinessProbe(spec, cs.Name)
		}
	}
	return statuses
}

func hasReadinessProbe(spec *corev1.PodSpec, name string) bool {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return spec.Containers[i].ReadinessProbe != nil
		}
	}
	return false
}

// podPhase follows the kubelet's getPhase.
func podPhase(spec *corev1.PodSpec, initStatuses, statuses []corev1.ContainerStatus, podIsTerminal bool) corev1.PodPhase {
	pendingInit, failedInit := 0, 0
	for i := range spec.InitContainers {
		cs := findStatus(initStatuses, spec.InitContainers[i].Name)
		switch {
		case cs == nil:
			pendingInit++
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			if cs.LastTerminationState.Terminated.ExitCode != 0 {
				failedInit++
			}
		default:
			pendingInit++
		}
	}
	if failedInit > 0 && spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	if pendingInit > 0 || failedInit > 0 {
		if podIsTerminal {
			return corev1.PodFailed
		}
		return corev1.PodPending
	}
	running, waiting, stopped, succeeded := 0, 0, 0, 0
	for i := range spec.Containers {
		cs := findStatus(statuses, spec.Containers[i].Name)
		switch {
		case cs == nil:
			waiting++
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		if spec.RestartPolicy == corev1.RestartPolicyAlways && !podIsTerminal {
			return corev1.PodRunning
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		if spec.RestartPolicy == corev1.RestartPolicyNever || podIsTerminal {
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

func findStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// initializedCondition follows the kubelet's GeneratePodInitializedCondition.
func initializedCondition(spec *corev1.PodSpec, initStatuses, statuses []corev1.ContainerStatus, phase corev1.PodPhase) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	var unknown, incomplete []string
	for i := range spec.InitContainers {
		name := spec.InitContainers[i].Name
		cs := findStatus(initStatuses, name)
		if cs == nil {
			unknown = append(unknown, name)
			continue
		}
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			incomplete = append(incomplete, name)
		}
	}
	if phase == corev1.PodSucceeded && len(unknown) == 0 {
		c.Reason = reasonPodCompleted
		return c
	}
	if anyRegularStarted(statuses) {
		return c
	}
	if msg := containersMessage(unknown, "incomplete", incomplete); msg != "" {
		c.Status, c.Reason, c.Message = corev1.ConditionFalse, reasonContainersNotInitialized, msg
	}
	return c
}

func anyRegularStarted(statuses []corev1.ContainerStatus) bool {
	for i := range statuses {
		cs := &statuses[i]
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

// containersReadyCondition follows the kubelet's
// GenerateContainersReadyCondition.
func containersReadyCondition(spec *corev1.PodSpec, statuses []corev1.ContainerStatus, phase corev1.PodPhase) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse}
	var unknown, unready []string
	for i := range spec.Containers {
		name := spec.Containers[i].Name
		cs := findStatus(statuses, name)
		if cs == nil {
			unknown = append(unknown, name)
			continue
		}
		if !cs.Ready {
			unready = append(unready, name)
		}
	}
	if phase == corev1.PodSucceeded && len(unknown) == 0 {
		c.Reason = reasonPodCompleted
		return c
	}
	if phase == corev1.PodFailed {
		c.Reason = reasonPodFailed
		return c
	}
	if msg := containersMessage(unknown, "unready", unready); msg != "" {
		c.Reason, c.Message = reasonContainersNotReady, msg
		return c
	}
	c.Status = corev1.ConditionTrue
	return c
}

func boolStatus(b bool) corev1.ConditionStatus {
	if b {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

func hasCondition(conds []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return true
		}
	}
	return false
}

// mergeConditions keeps lastTransitionTime of conditions whose status did
// not change and stamps now on the others. Conditions of other writers are
// left to the strategic merge patch.
func mergeConditions(old, conds []corev1.PodCondition, now metav1.Time) []corev1.PodCondition {
	for i := range conds {
		c := &conds[i]
		c.LastTransitionTime = now
		for _, o := range old {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
				if c.Type == corev1.DisruptionTarget {
					c.Reason, c.Message = o.Reason, o.Message
				}
			}
		}
	}
	return conds
}

// truncNow is the agent clock's now at second resolution.
func truncNow(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }

// containersMessage is the kubelet's condition message listing containers
// with unknown status, then those in the given state ("incomplete",
// "unready"); empty when both lists are.
func containersMessage(unknown []string, state string, others []string) string {
	var parts []string
	if len(unknown) > 0 {
		parts = append(parts, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(others) > 0 {
		parts = append(parts, fmt.Sprintf("containers with %s status: %s", state, others))
	}
	return strings.Join(parts, ", ")
}
