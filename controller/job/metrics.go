package job

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the job_controller_* series of kube-controller-manager.
type metrics struct {
	syncDuration       *prometheus.HistogramVec
	syncs              *prometheus.CounterVec
	jobsFinished       *prometheus.CounterVec
	byExternal         *prometheus.CounterVec
	podsFinished       *prometheus.CounterVec
	pfpHandled         *prometheus.CounterVec
	terminatedTracking *prometheus.CounterVec
	finishedIndexes    *prometheus.CounterVec
	podsCreation       *prometheus.CounterVec
}

const subsystem = "job_controller"

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: subsystem, Name: name, Help: help}, labels)
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "job_sync_duration_seconds",
			Help:    "The time it took to sync a job",
			Buckets: prometheus.ExponentialBuckets(0.004, 2, 15),
		}, []string{"completion_mode", "result", "action"}),
		syncs:              counter("job_syncs_total", "The number of job syncs", "completion_mode", "result", "action"),
		jobsFinished:       counter("jobs_finished_total", "The number of finished jobs", "completion_mode", "result", "reason"),
		byExternal:         counter("jobs_by_external_controller_total", "The number of Jobs managed by an external controller", "controller_name"),
		podsFinished:       counter("job_pods_finished_total", "The number of finished Pods that are fully tracked", "completion_mode", "result"),
		pfpHandled:         counter("pod_failures_handled_by_failure_policy_total", "The number of failed Pods handled by failure policy", "action"),
		terminatedTracking: counter("terminated_pods_tracking_finalizer_total", "The number of terminated pods with the tracking finalizer", "event"),
		finishedIndexes:    counter("job_finished_indexes_total", "The number of finished indexes", "status", "backoffLimit"),
		podsCreation:       counter("job_pods_creation_total", "The number of Pods created by the Job controller", "reason", "status"),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.syncDuration, m.syncs, m.jobsFinished, m.byExternal, m.podsFinished,
		m.pfpHandled, m.terminatedTracking, m.finishedIndexes, m.podsCreation} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
		}
	}
	return m, nil
}
