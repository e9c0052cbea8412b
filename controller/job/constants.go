package job

import "time"

// Defaults of the tunables, the same values as kube-controller-manager.
const (
	// DefaultSyncJobBatchPeriod delays syncs triggered by pod updates so a
	// burst of pod changes is handled in one sync.
	DefaultSyncJobBatchPeriod = time.Second
	// DefaultJobAPIBackOff and MaxJobAPIBackOff bound the per-Job rate
	// limiter used after sync errors.
	DefaultJobAPIBackOff = time.Second
	MaxJobAPIBackOff     = time.Minute
	// DefaultJobPodFailureBackOff is the first delay before a failed pod is
	// replaced; it doubles with each failure up to MaxJobPodFailureBackOff.
	DefaultJobPodFailureBackOff = 10 * time.Second
	MaxJobPodFailureBackOff     = 10 * time.Minute
	// MaxUncountedPods caps the UIDs moved to uncountedTerminatedPods in one sync.
	MaxUncountedPods = 500
	// MaxPodCreateDeletePerSync caps pod creations or deletions in one sync.
	MaxPodCreateDeletePerSync = 500
	// ExpectationsTimeout is how long unmet pod expectations block a Job.
	ExpectationsTimeout = 5 * time.Minute

	slowStartInitialBatchSize = 1
	// maxGeneratedNameLength is 63 minus the 5 random characters the API
	// server appends to generateName.
	maxGeneratedNameLength = 58
	controllerComponent    = "job-controller"
	// reasonContainerStatusUnknown is the kubelet's reason for a container
	// it could not locate.
	reasonContainerStatusUnknown = "ContainerStatusUnknown"
)

// Condition messages and reasons written by the controller.
const (
	msgBackoffLimitExceeded  = "Job has reached the specified backoff limit"
	msgDeadlineExceeded      = "Job was active longer than specified deadline"
	msgMaxFailedIndexes      = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes         = "Job has failed indexes"
	msgCompletionsReached    = "Reached expected number of succeeded pods"
	reasonSuspended          = "JobSuspended"
	msgSuspended             = "Job suspended"
	reasonResumed            = "JobResumed"
	msgResumed               = "Job resumed"
	eventSuspended           = "Suspended"
	eventResumed             = "Resumed"
	eventCompleted           = "Completed"
	msgCompleted             = "Job completed"
	eventTooManySucceeded    = "TooManySucceededPods"
	msgTooManySucceeded      = "Too many succeeded pods running after completion count reached"
	eventSuccessfulCreate    = "SuccessfulCreate"
	eventFailedCreate        = "FailedCreate"
	eventSuccessfulDelete    = "SuccessfulDelete"
	eventFailedDelete        = "FailedDelete"
	eventUnknownCompletion   = "UnknownCompletionMode"
	msgUnknownCompletionMode = "Skipped Job sync because completion mode is unknown"
)

// Values of the action label of the sync metrics.
const (
	actionReconciling = "reconciling"
	actionTracking    = "tracking"
	actionPodsCreated = "pods_created"
	actionPodsDeleted = "pods_deleted"
)
