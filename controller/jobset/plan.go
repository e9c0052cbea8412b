package jobset

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// event is a Kubernetes event about the JobSet, emitted by the apply layer.
type event struct {
	Type    string
	Reason  string
	Message string
}

// plan is everything one reconcile wants to change. decide fills it from
// what it observed; apply carries it out through client-go.
type plan struct {
	// js is the JobSet with its desired status.
	js *jobsetapi.JobSet
	// updateStatus is true when js.Status differs from what was read.
	updateStatus bool
	// events are emitted only after the status update succeeds.
	events []event

	deleteJobs    []*batchv1.Job // foreground deletion
	createService *corev1.Service
	createJobs    []*batchv1.Job
	jobsToSuspend []*batchv1.Job // copies with spec.suspend=true
	jobsToResume  []*batchv1.Job // copies with spec.suspend=false and a merged template

	deleteJobSet bool // TTL after finished expired
	requeueAfter time.Duration

	completed bool // the Completed condition was set in this pass
	failed    bool // the Failed condition was set in this pass
}

// queueEvent records an event to emit after a successful status update.
func (p *plan) queueEvent(eventType, reason, message string) {
	p.events = append(p.events, event{Type: eventType, Reason: reason, Message: message})
}

// markStatusChanged asks the apply layer to write the status.
func (p *plan) markStatusChanged() {
	p.updateStatus = true
}
