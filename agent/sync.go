package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batchlet/batchlet/runtime"
)

// podState is what the agent keeps about a pod it started.
type podState struct {
	uid       types.UID
	ns, name  string
	hostname  string
	subdomain string
	podIP     string
	startTime metav1.Time
	// terminating: the agent asked the runtime to kill the pod.
	terminating bool
	reason      string // pod status reason once terminating (DeadlineExceeded, Terminated)
	message     string
	// disruption: the message of the DisruptionTarget condition
	// (TerminationByKubelet) of a pod ended by a node shutdown or lost
	// with the previous agent process; "" for none.
	disruption string
	written    *corev1.PodStatus // last status written
	writtenRV  string            // the pod's resourceVersion after that write
	deleting   bool
	prober     *prober
	// heldSince: when the pod's first status was held back (see
	// holdFirstStatus); zero until then.
	heldSince time.Time
	// restarts: the pod's containers' restarts when its work-queue leases
	// were last returned (see Agent.queueRestarts).
	restarts int32
	// recorded: the container attempts (results.Attempt.Key) whose
	// results this process has written; only the pod's worker uses it.
	recorded map[string]bool
}

// syncPod brings one pod (namespace/name) in line: start, kill, write
// status, delete.
func (a *Agent) syncPod(ctx context.Context, key string) error {
	ns, name, err := splitKey(key)
	if err != nil {
		return nil
	}
	pod, err := a.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		a.forget(key, 0)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get pod %s: %w", key, err)
	}
	st := a.state(key)
	if st != nil && st.uid != pod.UID {
		a.forget(key, 0)
		st = nil
	}
	if st == nil {
		return a.syncNewPod(ctx, pod)
	}
	return a.syncStartedPod(ctx, pod, st)
}

func splitKey(key string) (string, string, error) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:], nil
		}
	}
	return "", "", fmt.Errorf("bad key %q", key)
}

func (a *Agent) state(key string) *podState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.states[key]
}

// forget kills what is left of a pod the agent no longer sees and frees it.
func (a *Agent) forget(key string, grace time.Duration) {
	a.mu.Lock()
	st, ok := a.states[key]
	if ok {
		delete(a.states, key)
		delete(a.byUID, st.uid)
		if sd := a.subdomains[st.ns+"/"+st.subdomain]; sd != nil {
			delete(sd, st.uid)
			if len(sd) == 0 {
				delete(a.subdomains, st.ns+"/"+st.subdomain)
			}
		}
	}
	a.mu.Unlock()
	if !ok {
		return
	}
	st.prober.stop()
	a.queues.PodEnded(context.Background(), st.uid)
	a.cfg.PodIPs.Release(st.uid)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace+10*time.Second)
		defer cancel()
		_ = a.cfg.Runtime.KillPod(ctx, st.uid, grace)
		a.cfg.Runtime.RemovePod(st.uid)
	}()
	a.refreshSubdomain(st)
}

// syncNewPod starts a pod the agent has no record of: a new one, or one
// whose containers were lost with a previous agent process (see recoverPod).
func (a *Agent) syncNewPod(ctx context.Context, pod *corev1.Pod) error {
	if pod.Spec.NodeName != a.cfg.NodeName {
		return nil
	}
	if pod.DeletionTimestamp != nil {
		if err := a.failUnstarted(ctx, pod); err != nil {
			return err
		}
		return a.deletePod(ctx, pod)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	ip := a.cfg.ListenAddress
	if !pod.Spec.HostNetwork {
		var err error
		if ip, err = a.cfg.PodIPs.Allocate(pod.UID, pod.Status.PodIP); err != nil {
			return fmt.Errorf("allocate IP for pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	st := &podState{uid: pod.UID, ns: pod.Namespace, name: pod.Name, podIP: ip, restarts: restartSum(pod.Status.ContainerStatuses),
		hostname: pod.Spec.Hostname, subdomain: pod.Spec.Subdomain, startTime: truncNow(a.cfg.Clock.Now())}
	if st.hostname == "" {
		st.hostname = pod.Name
	}
	if pod.Status.StartTime != nil {
		st.startTime = *pod.Status.StartTime
	}
	key := pod.Namespace + "/" + pod.Name
	a.mu.Lock()
	a.states[key] = st
	a.byUID[pod.UID] = key
	if st.subdomain != "" {
		sdKey := st.ns + "/" + st.subdomain
		if a.subdomains[sdKey] == nil {
			a.subdomains[sdKey] = map[types.UID]*podState{}
		}
		a.subdomains[sdKey][st.uid] = st
	}
	a.mu.Unlock()
	// A shallow copy with a status of its own: the runtime copies the pod
	// it keeps, and nothing here writes to what the copy shares with the
	// informer's pod.
	run := *pod
	run.Status.PodIP, run.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	run.Status.HostIP, run.Status.HostIPs = a.cfg.ListenAddress, []corev1.HostIP{{IP: a.cfg.ListenAddress}}
	run.Status.StartTime = &st.startTime
	if err := a.prepareWorkQueue(ctx, &run); err != nil {
		a.forget(key, 0)
		return err
	}
	adopted, err := a.adopt(ctx, &run)
	if err != nil {
		a.forget(key, 0)
		return err
	}
	if !adopted {
		rec := a.recover(&run)
		if rec.initStatuses != nil || rec.statuses != nil {
			run.Status.InitContainerStatuses, run.Status.ContainerStatuses = rec.initStatuses, rec.statuses
		}
		if rec.action == recoverFail {
			st.disruption = messageLostWithAgent
		}
		if err := a.cfg.Runtime.StartPod(ctx, &run, &resolver{a: a}); err != nil {
			a.recorder.Eventf(&run, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
			return fmt.Errorf("start pod %s: %w", key, err)
		}
	}
	a.refreshSubdomain(st)
	st.prober = a.startProber(&run, key)
	if ads := pod.Spec.ActiveDeadlineSeconds; ads != nil {
		left := st.startTime.Add(time.Duration(*ads) * time.Second).Sub(a.cfg.Clock.Now())
		a.queue.AddAfter(key, max(left, 0))
	}
	// The first status is written when the runtime reports a change, and
	// held back a little unless terminal (holdFirstStatus), so a pod that
	// starts at once goes straight to Running, or to its end, in one write.
	return nil
}

// adopt hands run to the runtime when its containers outlived an earlier
// agent process (runtime.Adopter); otherwise run's statuses become what the
// runtime found on disk, if anything, for recover to decide from.
func (a *Agent) adopt(ctx context.Context, run *corev1.Pod) (bool, error) {
	ad, ok := a.cfg.Runtime.(runtime.Adopter)
	if !ok {
		return false, nil
	}
	res, err := ad.Adopt(ctx, run, &resolver{a: a})
	if err != nil {
		return false, fmt.Errorf("adopt pod %s/%s: %w", run.Namespace, run.Name, err)
	}
	if res.Adopted {
		a.log.Info("adopted the containers of an earlier agent", "namespace", run.Namespace, "name", run.Name)
		return true, nil
	}
	if res.InitContainerStatuses != nil || res.ContainerStatuses != nil {
		run.Status.InitContainerStatuses, run.Status.ContainerStatuses = res.InitContainerStatuses, res.ContainerStatuses
	}
	return false, nil
}

// recover decides how a pod goes on in the runtime and logs what was lost.
func (a *Agent) recover(pod *corev1.Pod) recovery {
	_, known := a.cfg.Runtime.PodStatus(pod.UID)
	rec := recoverPod(pod, known)
	if rec.action != recoverStart {
		a.log.Info("containers of the pod were lost with the previous agent", "namespace", pod.Namespace, "name", pod.Name,
			"action", rec.action.String(), "restartPolicy", string(pod.Spec.RestartPolicy))
	}
	return rec
}

// syncStartedPod kills when asked, writes the status, and deletes a
// terminated pod whose deletion was requested.
func (a *Agent) syncStartedPod(ctx context.Context, pod *corev1.Pod, st *podState) error {
	if pod.DeletionTimestamp == nil && finished(st) {
		// A terminal status is final, as the kubelet keeps it: nothing
		// runs any more, and neither a deadline passing since nor the
		// updates that bring the pod back here (the agent's own write,
		// the Job controller's) change it.
		return nil
	}
	if pod.DeletionTimestamp != nil && !st.terminating && finished(st) {
		// Nothing runs any more and the final status is written.
		if st.deleting {
			return nil
		}
		st.deleting = true
		return a.deletePod(ctx, pod)
	}
	if pod.DeletionTimestamp != nil && !st.terminating {
		grace := 30 * time.Second
		if pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		a.terminate(st, grace)
	}
	if !st.terminating && a.pastDeadline(pod, st) {
		st.reason, st.message = reasonDeadlineExceeded, messageDeadlineExceeded
		a.recorder.Event(pod, corev1.EventTypeNormal, reasonDeadlineExceeded, messageDeadlineExceeded)
		a.terminate(st, podGrace(pod))
	}
	rs, ok := a.cfg.Runtime.PodStatus(st.uid)
	if !ok {
		return nil
	}
	if !st.terminating && !rs.Done && a.isShuttingDown() {
		st.disruption = messageNodeShutdown
		st.reason, st.message = reasonNodeShutdown, messageNodeShutdown
		a.terminate(st, min(podGrace(pod), a.cfg.ShutdownGracePeriod))
	}
	a.queueRestarts(ctx, pod, st, rs)
	if err := a.writeStatus(ctx, pod, st, rs); err != nil {
		return err
	}
	if finished(st) {
		// Its leases go back to the queue and its queue API stops before
		// the IP can serve another pod.
		a.queues.PodEnded(ctx, st.uid)
		// As the kubelet tears down a terminated pod's network, its IP
		// returns to the pool (status.podIP stays as written).
		a.cfg.PodIPs.Release(st.uid)
	}
	if pod.DeletionTimestamp != nil && rs.Done && !st.deleting {
		if err := a.deletePod(ctx, pod); err != nil {
			return err
		}
		st.deleting = true
	}
	return nil
}

func podGrace(pod *corev1.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

func (a *Agent) pastDeadline(pod *corev1.Pod, st *podState) bool {
	ads := pod.Spec.ActiveDeadlineSeconds
	if ads == nil {
		return false
	}
	return !a.cfg.Clock.Now().Before(st.startTime.Add(time.Duration(*ads) * time.Second))
}

// terminate kills the pod in the background; the runtime's notifications
// bring the pod back to the queue as its containers end.
func (a *Agent) terminate(st *podState, grace time.Duration) {
	a.mu.Lock()
	st.terminating = true
	a.mu.Unlock()
	st.prober.stop()
	uid := st.uid
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace+30*time.Second)
		defer cancel()
		if err := a.cfg.Runtime.KillPod(ctx, uid, grace); err != nil {
			a.log.Info("kill pod", "namespace", st.ns, "name", st.name, "err", err.Error())
		}
		a.runtimeChanged(uid)
	}()
}

// writeStatus patches pods/status when the computed status differs from
// the last one written.
func (a *Agent) writeStatus(ctx context.Context, pod *corev1.Pod, st *podState, rs runtime.PodStatus) error {
	// podStatus only reads old, so neither the pod (the informer's) nor
	// the last status written is copied.
	old := &pod.Status
	if st.written != nil {
		withOthers := *st.written
		withOthers.Conditions = mergeOthers(st.written.Conditions, pod.Status.Conditions)
		old = &withOthers
	}
	in := statusInput{spec: &pod.Spec, old: old, rt: rs, started: true, ready: st.prober.results(), terminal: st.terminating,
		reason: st.reason, message: st.message, disruption: st.disruption, hostIP: a.cfg.ListenAddress,
		podIP: st.podIP, startTime: st.startTime, now: truncNow(a.cfg.Clock.Now())}
	next := podStatus(in)
	prev := st.written
	if prev == nil {
		prev = &pod.Status
	}
	if ownFieldsEqual(prev, &next) && !readinessReverted(&pod.Status, pod.ResourceVersion, st.written, st.writtenRV) {
		return nil
	}
	if a.holdFirstStatus(pod, st, &next) {
		return nil
	}
	// The results of the attempts next shows are created beside the
	// status patch, not after it: each write waits for a durable commit,
	// and two writes in flight share one where two in a row took two.
	pending := a.newResults(ctx, pod, st, &next)
	wait := a.startResults(ctx, pending)
	rv, err := a.patchStatusRV(ctx, pod, &next)
	markRecorded(st, pending, wait(), err)
	if err != nil {
		return err
	}
	a.mu.Lock()
	st.written, st.writtenRV = &next, rv
	a.mu.Unlock()
	return nil
}

// holdFirstStatus reports whether next, a pod's first status, waits until
// Config.FirstStatusDelay after the agent first had it to write, and then
// brings the pod back to the queue. Terminal statuses, and those of pods
// the agent is terminating, go out at once.
func (a *Agent) holdFirstStatus(pod *corev1.Pod, st *podState, next *corev1.PodStatus) bool {
	if st.written != nil || st.terminating || a.cfg.FirstStatusDelay < 0 ||
		next.Phase == corev1.PodSucceeded || next.Phase == corev1.PodFailed {
		return false
	}
	now := a.cfg.Clock.Now()
	a.mu.Lock()
	if st.heldSince.IsZero() {
		st.heldSince = now
	}
	wait := st.heldSince.Add(a.cfg.FirstStatusDelay).Sub(now)
	a.mu.Unlock()
	if wait <= 0 {
		return false
	}
	a.queue.AddAfter(pod.Namespace+"/"+pod.Name, wait)
	return true
}

// mergeOthers adds to ours the conditions of other writers found in api;
// ours itself when there are none. ours is never written to.
func mergeOthers(ours, api []corev1.PodCondition) []corev1.PodCondition {
	// At full capacity, the first append copies.
	out := ours[:len(ours):len(ours)]
	for _, c := range api {
		if !hasCondition(out, c.Type) {
			out = append(out, c)
		}
	}
	return out
}

// ownFieldsEqual compares the status fields the agent writes.
func ownFieldsEqual(a, b *corev1.PodStatus) bool {
	if a.Phase != b.Phase || a.PodIP != b.PodIP || a.HostIP != b.HostIP || a.Reason != b.Reason || a.Message != b.Message {
		return false
	}
	if (a.StartTime == nil) != (b.StartTime == nil) || (a.StartTime != nil && !a.StartTime.Equal(b.StartTime)) {
		return false
	}
	if !apiequality.Semantic.DeepEqual(a.ContainerStatuses, b.ContainerStatuses) ||
		!apiequality.Semantic.DeepEqual(a.InitContainerStatuses, b.InitContainerStatuses) {
		return false
	}
	for _, c := range b.Conditions {
		found := false
		for _, o := range a.Conditions {
			if o.Type == c.Type {
				found = o.Status == c.Status && o.Reason == c.Reason && o.Message == c.Message
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// deletePod removes a pod whose containers are gone: grace 0 with a UID
// precondition, as the kubelet does.
func (a *Agent) deletePod(ctx context.Context, pod *corev1.Pod) error {
	uid := pod.UID
	err := a.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func (a *Agent) isShuttingDown() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.shuttingDown
}

// failUnstarted writes phase Failed for a pod deleted before it ran, with
// its containers terminated as unknown, as the kubelet does.
func (a *Agent) failUnstarted(ctx context.Context, pod *corev1.Pod) error {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	st := pod.Status.DeepCopy()
	st.Phase = corev1.PodFailed
	unknown := func(cs []corev1.Container) []corev1.ContainerStatus {
		out := make([]corev1.ContainerStatus, 0, len(cs))
		for _, c := range cs {
			out = append(out, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: new(bool),
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137,
					Reason: "ContainerStatusUnknown", Message: "The container could not be located when the pod was terminated"}}})
		}
		return out
	}
	st.InitContainerStatuses = unknown(pod.Spec.InitContainers)
	st.ContainerStatuses = unknown(pod.Spec.Containers)
	return a.patchStatus(ctx, pod, st)
}

// finished reports whether a terminal status was written for the pod.
func finished(st *podState) bool {
	return st.written != nil && (st.written.Phase == corev1.PodSucceeded || st.written.Phase == corev1.PodFailed)
}
