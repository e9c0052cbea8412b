package jobset

import (
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// successPolicy returns the JobSet's success policy, defaulting to All.
func successPolicy(js *jobsetapi.JobSet) jobsetapi.SuccessPolicy {
	if js.Spec.SuccessPolicy == nil {
		return jobsetapi.SuccessPolicy{Operator: jobsetapi.OperatorAll}
	}
	return *js.Spec.SuccessPolicy
}

// successPolicyTargets reports whether the success policy covers rjobName.
func successPolicyTargets(sp jobsetapi.SuccessPolicy, rjobName string) bool {
	return len(sp.TargetReplicatedJobs) == 0 || slices.Contains(sp.TargetReplicatedJobs, rjobName)
}

// numJobsMatchingSuccessPolicy counts the successful Jobs the policy covers.
func numJobsMatchingSuccessPolicy(js *jobsetapi.JobSet, jobs []*batchv1.Job) int {
	sp := successPolicy(js)
	n := 0
	for _, job := range jobs {
		if successPolicyTargets(sp, job.Labels[jobsetapi.ReplicatedJobNameKey]) {
			n++
		}
	}
	return n
}

// numJobsExpectedToSucceed is 1 for Any and the targeted replicas for All.
func numJobsExpectedToSucceed(js *jobsetapi.JobSet) int {
	sp := successPolicy(js)
	switch sp.Operator {
	case jobsetapi.OperatorAny:
		return 1
	case jobsetapi.OperatorAll:
		total := 0
		for _, rjob := range js.Spec.ReplicatedJobs {
			if successPolicyTargets(sp, rjob.Name) {
				total += int(rjob.Replicas)
			}
		}
		return total
	}
	return 0
}

// successPolicyMet reports whether enough Jobs succeeded to complete the JobSet.
func successPolicyMet(js *jobsetapi.JobSet, successful []*batchv1.Job) bool {
	return numJobsMatchingSuccessPolicy(js, successful) >= numJobsExpectedToSucceed(js)
}
