// Package job is the batch/v1 Job controller: it turns Jobs into pods and
// tracks their outcome in the Job status with the finalizer protocol of
// kube-controller-manager (KEP-2307), including every failure and success
// policy of batch/v1.
//
// A sync (sync.go) reads the Job and its pods from informers and runs in
// three parts, as the JobSet controller's observe → decide → apply:
//
//   - decide (decide.go, manage.go and the policy files) is pure: from what
//     was observed and the injected clock it computes the new status, the
//     pod operations (creations or deletions, never both) and the events;
//   - apply (apply.go) executes the pod operations, and afterPodOps folds
//     their outcome (deletions that went through, creations that failed)
//     into the status;
//   - the finalizer protocol (protocol.go) is a small state machine —
//     record the finished pods as uncounted, release their finalizers,
//     count them and set the final condition — whose decisions are pure
//     (tracking.go) and whose writes go through trackingEffects.
//
// The Job's events are emitted only once its status is written, so a sync
// retried after a conflict does not record them twice; the events of pod
// creations and deletions follow each call, as upstream's pod control's.
package job
