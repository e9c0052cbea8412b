// Package job is the batch/v1 Job controller: it turns Jobs into pods and
// tracks their outcome in the Job status with the finalizer protocol of
// kube-controller-manager (KEP-2307), including every failure and success
// policy of batch/v1.
//
// The controller reads from informers, computes a plan with pure functions
// (decide.go, tracking.go and the policy files) and applies it with a thin
// layer of client-go calls (apply.go).
package job
