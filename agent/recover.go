package agent

import (
	corev1 "k8s.io/api/core/v1"
)

// When the agent restarts (after a crash, kill -9), the processes of the
// pods it ran died with it: the API still shows them running, but the
// runtime has no trace of them. As the kubelet does for containers it can
// no longer locate, the agent reports them terminated as
// ContainerStatusUnknown (exit code 137) instead of silently running the
// command again: a restartPolicy Never pod ends Failed, others restart the
// container in place with restartCount incremented.

// Reason, exit code and messages the kubelet gives containers it cannot
// locate: in the pod's final status (status manager, TerminatePod) and as
// the last state of a container it restarts (convertToAPIContainerStatuses).
const (
	reasonContainerStatusUnknown = "ContainerStatusUnknown"
	messageLostOnTermination     = "The container could not be located when the pod was terminated"
	messageLostAndRestarted      = "The container could not be located when the pod was deleted.  The container used to be Running"
	exitCodeLost                 = 137
)

// messageLostWithAgent is the message of the DisruptionTarget condition
// (reason TerminationByKubelet, as the kubelet's node shutdown and eviction
// give) of a restartPolicy Never pod whose containers were lost with the
// previous agent process: the pod was ended by the node, not by its own
// failure, so pod failure policies can match it (onPodConditions
// DisruptionTarget) and batchlet's Job controller does not count it
// (docs/differences.md). The Job controller recognizes such pods by the
// condition together with ContainerStatusUnknown containers.
const messageLostWithAgent = "Pod was terminated because its containers were lost when the node agent restarted."

// recoveryAction is what the agent does with a pod its runtime does not run.
type recoveryAction int

const (
	// recoverStart: nothing ran or nothing was lost; run the pod, going on
	// from the container statuses of the decision.
	recoverStart recoveryAction = iota
	// recoverFail: running containers were lost and restartPolicy is Never;
	// the statuses are final and the pod ends Failed.
	recoverFail
	// recoverRestart: running containers were lost and are restarted in
	// place (OnFailure, Always).
	recoverRestart
)

func (a recoveryAction) String() string {
	return [...]string{"start", "fail", "restart"}[a]
}

// recovery is the decision for one pod: the action and the container
// statuses the runtime goes on from (nil: start afresh).
type recovery struct {
	action       recoveryAction
	initStatuses []corev1.ContainerStatus
	statuses     []corev1.ContainerStatus
}

// recoverPod decides what to do with a non-terminal pod bound to this node
// that the agent has no record of. known tells whether the runtime still
// has the pod; then it is simply adopted.
func recoverPod(pod *corev1.Pod, known bool) recovery {
	st := pod.Status
	if known || (len(st.ContainerStatuses) == 0 && len(st.InitContainerStatuses) == 0) {
		return recovery{action: recoverStart}
	}
	init := specStatuses(pod.Spec.InitContainers, st.InitContainerStatuses, pod)
	ctrs := specStatuses(pod.Spec.Containers, st.ContainerStatuses, pod)
	lost := anyRunning(init) || anyRunning(ctrs)
	if lost && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		return recovery{action: recoverFail, initStatuses: terminateInit(init), statuses: terminateRegular(pod, ctrs)}
	}
	policy := pod.Spec.RestartPolicy
	waiting := defaultWaiting(pod)
	for i := range init {
		// An init container restarts only on failure, whatever the policy.
		resume(&init[i], corev1.RestartPolicyOnFailure, waiting)
	}
	for i := range ctrs {
		resume(&ctrs[i], policy, waiting)
	}
	r := recovery{action: recoverStart, initStatuses: init, statuses: ctrs}
	if lost {
		r.action = recoverRestart
	}
	return r
}

// specStatuses returns a status for every container of the spec, in spec
// order: the API's when it has one, the default waiting one otherwise.
func specStatuses(spec []corev1.Container, api []corev1.ContainerStatus, pod *corev1.Pod) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(spec))
	for _, c := range spec {
		cs := findStatus(api, c.Name)
		if cs == nil {
			cs = &corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: new(bool), State: defaultWaiting(pod)}
		}
		out = append(out, *cs.DeepCopy())
	}
	return out
}

// defaultWaiting is the kubelet's state of a container not created yet.
func defaultWaiting(pod *corev1.Pod) corev1.ContainerState {
	reason := "ContainerCreating"
	if len(pod.Spec.InitContainers) > 0 {
		reason = "PodInitializing"
	}
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

func anyRunning(list []corev1.ContainerStatus) bool {
	for _, cs := range list {
		if cs.State.Running != nil {
			return true
		}
	}
	return false
}

func lostTerminated(message string) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: exitCodeLost, Reason: reasonContainerStatusUnknown, Message: message}
}

// terminateLost ends cs as the status manager ends a container it cannot
// find in a terminated pod.
func terminateLost(cs *corev1.ContainerStatus) {
	cs.State = corev1.ContainerState{Terminated: lostTerminated(messageLostOnTermination)}
	cs.Ready = false
	cs.Started = new(bool)
}

// terminateInit ends the init containers that started (all but the
// trailing ones still waiting for a first start; at least the first).
func terminateInit(init []corev1.ContainerStatus) []corev1.ContainerStatus {
	started := 0
	for i := len(init) - 1; i >= 0; i-- {
		if init[i].State.Waiting == nil || init[i].LastTerminationState.Terminated != nil {
			started = i + 1
			break
		}
	}
	if started == 0 && len(init) > 0 {
		started = 1
	}
	for i := range init[:started] {
		if init[i].State.Terminated == nil {
			terminateLost(&init[i])
		}
	}
	return init
}

// terminateRegular ends every regular container not terminated yet, once
// the pod shows evidence of having initialized.
func terminateRegular(pod *corev1.Pod, ctrs []corev1.ContainerStatus) []corev1.ContainerStatus {
	if !podInitialized(pod) {
		return ctrs
	}
	for i := range ctrs {
		if ctrs[i].State.Terminated == nil {
			terminateLost(&ctrs[i])
		}
	}
	return ctrs
}

// podInitialized follows the status manager's hasPodInitialized.
func podInitialized(pod *corev1.Pod) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.LastTerminationState.Terminated != nil || cs.State.Waiting == nil {
			return true
		}
	}
	if n := len(pod.Status.InitContainerStatuses); n > 0 {
		last := pod.Status.InitContainerStatuses[n-1]
		for _, s := range []corev1.ContainerState{last.LastTerminationState, last.State} {
			if s.Terminated != nil && s.Terminated.ExitCode == 0 {
				return true
			}
		}
	}
	return false
}

// resume prepares one container to go on under policy: a lost running
// container gets the kubelet's unknown last state; one that ran and is due
// to run again (terminated, or waiting after a run) is counted as
// restarted, so that its next attempt never reuses an earlier one's number
// or log; waiting in the default state after a run, it was counted already. A container that ran to its end and is not restarted stays
// terminated; one that never ran is left as it is.
func resume(cs *corev1.ContainerStatus, policy corev1.RestartPolicy, waiting corev1.ContainerState) {
	switch {
	case cs.State.Running != nil:
		cs.LastTerminationState = corev1.ContainerState{Terminated: lostTerminated(messageLostAndRestarted)}
	case cs.State.Terminated != nil:
		if !restarts(policy, cs.State.Terminated.ExitCode) {
			return
		}
		cs.LastTerminationState = cs.State
	case cs.LastTerminationState.Terminated != nil:
		if w := cs.State.Waiting; w != nil && w.Reason == waiting.Waiting.Reason {
			// Already counted: an earlier recovery's restart not begun yet.
			return
		}
	default:
		return
	}
	cs.State = waiting
	cs.RestartCount++
	cs.Ready = false
	cs.Started = new(bool)
	cs.ContainerID = ""
}

// restarts applies a restart policy to an exit code.
func restarts(policy corev1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}
