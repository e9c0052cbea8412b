package agent

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"

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
		a.recorder.Eventf(run, corev1.EventTypeWarning, "FailedWorkQueue", "%v", err)
		return err
	}
	run.Spec.Containers = withEnv(run.Spec.Containers, env)
	run.Spec.InitContainers = withEnv(run.Spec.InitContainers, env)
	return nil
}

// withEnv returns copies of cs with env in front of their own.
func withEnv(cs []corev1.Container, env []corev1.EnvVar) []corev1.Container {
	out := slices.Clone(cs)
	for i := range out {
		out[i].Env = append(slices.Clone(env), out[i].Env...)
	}
	return out
}
