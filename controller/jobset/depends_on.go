package jobset

import jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

// dependencyReachedStatus reports whether every dependency of rjob reached
// its required status: Complete needs all replicas succeeded, Ready needs
// all replicas ready, succeeded or failed. replicas holds the replicas of
// the replicatedJobs iterated so far (dependencies must come earlier).
func dependencyReachedStatus(rjob jobsetapi.ReplicatedJob, replicas map[string]int32, statuses []jobsetapi.ReplicatedJobStatus) bool {
	for _, dep := range rjob.DependsOn {
		s := findReplicatedJobStatus(statuses, dep.Name)
		if s == nil {
			return false
		}
		switch dep.Status {
		case jobsetapi.DependencyComplete:
			if replicas[dep.Name] != s.Succeeded {
				return false
			}
		case jobsetapi.DependencyReady:
			if replicas[dep.Name] != s.Failed+s.Ready+s.Succeeded {
				return false
			}
		}
	}
	return true
}
