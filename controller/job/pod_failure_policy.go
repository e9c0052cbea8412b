package job

import (
	"fmt"
	"slices"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

// pfpResult is what the pod failure policy says about one failed pod.
type pfpResult struct {
	failJobMessage string                        // set for FailJob
	count          bool                          // whether the failure counts
	action         *batch.PodFailurePolicyAction // nil when no rule matched
}

// matchPodFailurePolicy evaluates the rules in order; the first matching rule
// with a known action decides. No match means the failure counts, except
// for a pod lost to the control plane, which batchlet ignores as upstream's
// Ignore action would (lostToControlPlane).
func matchPodFailurePolicy(policy *batch.PodFailurePolicy, pod *v1.Pod) pfpResult {
	noMatch := pfpResult{count: !lostToControlPlane(pod)}
	if policy == nil {
		return noMatch
	}
	for i, rule := range policy.Rules {
		if !knownAction(rule.Action) {
			continue
		}
		var msg string
		switch {
		case rule.OnExitCodes != nil:
			cs := matchOnExitCodes(rule.OnExitCodes, pod)
			if cs == nil {
				continue
			}
			msg = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d",
				cs.Name, pod.Namespace, pod.Name, cs.State.Terminated.ExitCode, rule.Action, i)
		case rule.OnPodConditions != nil:
			cond := matchOnPodConditions(rule.OnPodConditions, pod)
			if cond == nil {
				continue
			}
			msg = fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d",
				pod.Namespace, pod.Name, cond.Type, rule.Action, i)
		default:
			continue
		}
		action := rule.Action
		res := pfpResult{count: action != batch.PodFailurePolicyActionIgnore, action: &action}
		if action == batch.PodFailurePolicyActionFailJob {
			res.failJobMessage = msg
		}
		return res
	}
	return noMatch
}

func knownAction(a batch.PodFailurePolicyAction) bool {
	switch a {
	case batch.PodFailurePolicyActionFailJob, batch.PodFailurePolicyActionIgnore,
		batch.PodFailurePolicyActionCount, batch.PodFailurePolicyActionFailIndex:
		return true
	}
	return false
}

// matchOnExitCodes returns the first terminated container (regular, then
// init) with a non-zero exit code that satisfies the requirement.
func matchOnExitCodes(req *batch.PodFailurePolicyOnExitCodesRequirement, pod *v1.Pod) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			cs := &list[i]
			if cs.State.Terminated == nil || cs.State.Terminated.ExitCode == 0 {
				continue
			}
			if req.ContainerName != nil && *req.ContainerName != cs.Name {
				continue
			}
			if exitCodeMatches(req, cs.State.Terminated.ExitCode) {
				return cs
			}
		}
	}
	return nil
}

func exitCodeMatches(req *batch.PodFailurePolicyOnExitCodesRequirement, code int32) bool {
	in := slices.Contains(req.Values, code)
	switch req.Operator {
	case batch.PodFailurePolicyOnExitCodesOpIn:
		return in
	case batch.PodFailurePolicyOnExitCodesOpNotIn:
		return !in
	}
	return false
}

func matchOnPodConditions(patterns []batch.PodFailurePolicyOnPodConditionsPattern, pod *v1.Pod) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		for _, pat := range patterns {
			want := pat.Status
			if want == "" {
				want = v1.ConditionTrue
			}
			if c.Type == pat.Type && c.Status == want {
				return c
			}
		}
	}
	return nil
}

// failJobMessage returns the message of the first failed pod (in list order)
// matching a FailJob rule.
func failJobMessage(job *batch.Job, pods []*v1.Pod) (string, bool) {
	if job.Spec.PodFailurePolicy == nil {
		return "", false
	}
	for _, p := range pods {
		if !isPodFailed(p, job) {
			continue
		}
		if r := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p); r.failJobMessage != "" {
			return r.failJobMessage, true
		}
	}
	return "", false
}
