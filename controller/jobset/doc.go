// Package jobset reconciles JobSets (jobset.x-k8s.io/v1alpha2) into child
// batch/v1 Jobs and a headless Service, the way kubernetes-sigs/jobset v0.12
// does: it reads the JobSet and its Jobs, computes a plan with a pure
// decision function, and applies it through client-go.
package jobset
