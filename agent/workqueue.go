package agent

import (
	"context"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/workqueue"
)

// WorkQueueConfig serves the built-in work queue (package workqueue) to the
// pods that ask for one with the batchlet.dev/work-queue annotation.
type WorkQueueConfig struct {
	// Client reads and writes WorkQueues; nil refuses queue pods.
	Client dynamic.Interface
	// Port on each pod's IP; 0 takes workqueue.DefaultPort.
	Port int
	// Key derives each pod's secret; keep it across restarts so adopted
	// pods keep their queue. Empty takes a random key.
	Key []byte
}

func (a *Agent) newWorkQueues() *workqueue.Manager {
	c := a.cfg.WorkQueue
	return workqueue.NewManager(workqueue.Config{Client: c.Client, Kube: a.cfg.Client, Port: c.Port, Key: c.Key,
		Clock: a.cfg.Clock, Logger: a.log.With("component", "workqueue")})
}

// prepareWorkQueue readies the queue of a pod that asks for one and gives
// its containers BATCHLET_QUEUE_URL (first, so their own env wins). A
// failure (a missing ConfigMap, a bad annotation) is an event on the pod
// and a retry, as a missing volume source is on the kubelet.
func (a *Agent) prepareWorkQueue(ctx context.Context, run *corev1.Pod) error {
	if !workqueue.Wants(run) {
		return nil
	}
	r := &resolver{a: a}
	env, err := a.queues.Prepare(ctx, run, run.Status.PodIP, r.ConfigMap)
	if err != nil {
		a.recorder.Eventf(run, corev1.EventTypeWarning, reasonFailedWorkQueue, "%v", err)
		if job := ownerJob(run); job != nil {
			a.recorder.Eventf(job, corev1.EventTypeWarning, reasonFailedWorkQueue, "pod %s: %v", run.Name, err)
		}
		return err
	}
	run.Spec.Containers = withEnv(run.Spec.Containers, env)
	run.Spec.InitContainers = withEnv(run.Spec.InitContainers, env)
	return nil
}

// queueRestarts returns the work-queue leases of a pod a container of which
// ended (to be restarted in place) since last seen (the API's count, for a pod new to
// this agent): the process that held them is gone.
func (a *Agent) queueRestarts(ctx context.Context, pod *corev1.Pod, st *podState, rs runtime.PodStatus) {
	if !workqueue.Wants(pod) {
		return
	}
	if n := restartSum(rs.ContainerStatuses); n > st.restarts {
		st.restarts = n
		a.queues.ContainerRestarted(ctx, st.uid)
	}
}

// restartSum counts the container attempts that ended: the restarts, and
// a container terminated now (waiting out its restart backoff, or done).
func restartSum(statuses []corev1.ContainerStatus) int32 {
	var n int32
	for _, s := range statuses {
		n += s.RestartCount
		if s.State.Terminated != nil {
			n++
		}
	}
	return n
}

// reasonFailedWorkQueue is the event of a pod whose queue cannot be made.
const reasonFailedWorkQueue = "FailedWorkQueue"

// ownerJob is a reference to the pod's Job for an event, or nil.
func ownerJob(pod *corev1.Pod) *batchv1.Job {
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "Job" {
		return nil
	}
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: owner.Name, UID: owner.UID}}
}

// withEnv returns copies of cs with env in front of their own.
func withEnv(cs []corev1.Container, env []corev1.EnvVar) []corev1.Container {
	out := slices.Clone(cs)
	for i := range out {
		out[i].Env = append(slices.Clone(env), out[i].Env...)
	}
	return out
}
