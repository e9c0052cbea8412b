package jobset

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// GroupVersionResource is the JobSet resource the controller watches.
var GroupVersionResource = schema.GroupVersionResource{
	Group:    jobsetapi.GroupVersion.Group,
	Version:  jobsetapi.GroupVersion.Version,
	Resource: "jobsets",
}

// Label and annotation keys that are not part of the JobSet API package.
const (
	restartsKey           = "jobset.sigs.k8s.io/restart-attempt"
	jobRestartAttemptKey  = "jobset.sigs.k8s.io/job-restart-attempt"
	priorityKey           = "jobset.sigs.k8s.io/priority"
	defaultGroupName      = "default"
	eventComponent        = "jobset"
	jobSetKind            = "JobSet"
	recreateJobActionName = "RecreateJob"
)

// Condition and event reasons and messages, byte for byte as upstream.
const (
	reasonReachedMaxRestarts  = "ReachedMaxRestarts"
	messageReachedMaxRestarts = "jobset failed due to reaching max number of restarts"
	reasonFailedJobs          = "FailedJobs"
	messageFailedJobs         = "jobset failed due to one or more job failures"
	reasonAllJobsCompleted    = "AllJobsCompleted"
	messageAllJobsCompleted   = "jobset completed successfully"

	reasonJobCreationFailed             = "JobCreationFailed"
	reasonHeadlessServiceCreationFailed = "HeadlessServiceCreationFailed"

	reasonInOrderInProgress  = "InOrderStartupPolicyInProgress"
	messageInOrderInProgress = "in order startup policy is in progress"
	reasonInOrderCompleted   = "InOrderStartupPolicyCompleted"
	messageInOrderCompleted  = "in order startup policy has completed"

	reasonDefaultFailurePolicy  = "DefaultFailurePolicy"
	reasonFailurePolicyFormat   = "FailurePolicy_%s"
	reasonJobsReady             = "JobsReady"
	messageJobsReady            = "all jobs are ready"
	reasonRestartJobSetFailed   = "JobSetFailed"
	messageRestartJobSetFailed  = "jobset failed"
	reasonRestartJobSetComplete = "JobSetCompleted"
	reasonRestartJobSetSuspend  = "JobSetSuspended"

	reasonSuspended  = "SuspendedJobs"
	messageSuspended = "jobset is suspended"
	reasonResumed    = "ResumeJobs"
	messageResumed   = "jobset is resumed"

	reasonFailJobSetAction                         = "FailJobSetFailurePolicyAction"
	messageFailJobSetAction                        = "applying FailJobSet failure policy action"
	reasonRestartJobSetAction                      = "RestartJobSetFailurePolicyAction"
	messageRestartJobSetAction                     = "applying RestartJobSet failure policy action"
	reasonRestartJobSetAndIgnoreMaxRestartsAction  = "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"
	messageRestartJobSetAndIgnoreMaxRestartsAction = "applying RestartJobSetAndIgnoreMaxRestarts failure policy action"
	reasonRestartJobAction                         = "RestartJobFailurePolicyAction"
	messageRestartJobAction                        = "applying RestartJob failure policy action"
	reasonRestartJobAndIgnoreMaxRestartsAction     = "RestartJobAndIgnoreMaxRestartsFailurePolicyAction"
	messageRestartJobAndIgnoreMaxRestartsAction    = "applying RestartJobAndIgnoreMaxRestarts failure policy action"
)
