// Package sim is a runtime.Runtime that runs no processes, for scale tests.
//
// A started pod's containers are Running at once and terminate after a
// duration with an exit code, both taken from pod annotations:
//
//	sim.batchlet.dev/duration   how long each attempt runs, a Go duration
//	                            ("1.5s", "2m"); default 0: the containers
//	                            terminate immediately and never show Running.
//	sim.batchlet.dev/exit-code  the exit code of each container; default 0.
//	                            0 gives reason Completed, anything else Error.
//	sim.batchlet.dev/failures   how many attempts exit with exit-code before
//	                            later attempts exit 0; default: all of them.
//
// Init containers complete at once with exit 0. Restarts follow the pod's
// restartPolicy with the kubelet's back-off (immediate, then 10s doubling).
// KillPod ends running containers with exit code 143 (SIGTERM). Exec and
// every readiness probe succeed while a container runs. A resumed pod goes
// on from its container statuses (see Runtime.resumeFrom). One goroutine
// and one timer serve every pod, so 100k pods cost only their statuses.
package sim

import (
	"container/heap"
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/runtime"
)

// Annotations read by the sim runtime.
const (
	DurationAnnotation = "sim.batchlet.dev/duration"
	ExitCodeAnnotation = "sim.batchlet.dev/exit-code"
	FailuresAnnotation = "sim.batchlet.dev/failures"
)

// Runtime is the simulated runtime. Create it with New and stop its timer
// goroutine by cancelling the context given to New.
type Runtime struct {
	clock clock.Clock
	wake  chan struct{}

	mu    sync.Mutex
	pods  map[types.UID]*simPod
	queue dueQueue
	subs  []func(types.UID)
}

var _ runtime.Runtime = (*Runtime)(nil)

type simPod struct {
	uid      types.UID
	policy   corev1.RestartPolicy
	duration time.Duration
	exitCode int32
	failures int // <0: every attempt fails with exitCode
	attempt  int
	backoff  time.Duration
	started  metav1.Time
	init     []corev1.ContainerStatus
	ctrs     []corev1.ContainerStatus
	done     bool
	killed   bool
}

// New returns a sim runtime whose timer goroutine runs until ctx ends.
func New(ctx context.Context, clk clock.Clock) *Runtime {
	if clk == nil {
		clk = clock.RealClock{}
	}
	r := &Runtime{clock: clk, wake: make(chan struct{}, 1), pods: map[types.UID]*simPod{}}
	go r.loop(ctx)
	return r
}

// StartPod implements runtime.Runtime.
func (r *Runtime) StartPod(_ context.Context, pod *corev1.Pod, _ runtime.Resolver) error {
	sp := &simPod{uid: pod.UID, policy: pod.Spec.RestartPolicy, failures: -1}
	if v, ok := pod.Annotations[DurationAnnotation]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("annotation %s: %w", DurationAnnotation, err)
		}
		sp.duration = d
	}
	if v, ok := pod.Annotations[ExitCodeAnnotation]; ok {
		c, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("annotation %s: %w", ExitCodeAnnotation, err)
		}
		sp.exitCode = int32(c)
	}
	if v, ok := pod.Annotations[FailuresAnnotation]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("annotation %s: %w", FailuresAnnotation, err)
		}
		sp.failures = n
	}
	now := r.now()
	for _, c := range pod.Spec.InitContainers {
		sp.init = append(sp.init, terminated(c, 0, now, now))
	}
	for _, c := range pod.Spec.Containers {
		sp.ctrs = append(sp.ctrs, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image})
	}
	sp.resumeFrom(pod.Status)
	r.mu.Lock()
	if _, ok := r.pods[pod.UID]; ok {
		r.mu.Unlock()
		return nil
	}
	r.pods[pod.UID] = sp
	if !sp.done {
		r.startAttempt(sp, now)
	}
	r.mu.Unlock()
	r.notify(pod.UID)
	return nil
}

// resumeFrom goes on from the container statuses of a resumed pod (see
// runtime.Runtime.StartPod), simplified as the sim runs a pod's containers
// as one: terminated init containers keep their state (a failed one ends
// the pod); when every container is terminated the pod is done at once,
// otherwise all of them run again from the highest restartCount, each
// keeping its lastState.
func (sp *simPod) resumeFrom(st corev1.PodStatus) {
	if len(st.ContainerStatuses) == 0 && len(st.InitContainerStatuses) == 0 {
		return
	}
	for i := range sp.init {
		prev, ok := find(st.InitContainerStatuses, sp.init[i].Name)
		if !ok || prev.State.Terminated == nil {
			continue
		}
		sp.init[i] = *prev.DeepCopy()
		if prev.State.Terminated.ExitCode != 0 {
			sp.done = true
		}
	}
	allDone := true
	for i := range sp.ctrs {
		prev, ok := find(st.ContainerStatuses, sp.ctrs[i].Name)
		if !ok {
			allDone = false
			continue
		}
		sp.ctrs[i].RestartCount = prev.RestartCount
		sp.ctrs[i].LastTerminationState = *prev.LastTerminationState.DeepCopy()
		sp.attempt = max(sp.attempt, int(prev.RestartCount))
		if prev.State.Terminated != nil {
			sp.ctrs[i] = *prev.DeepCopy()
		} else {
			allDone = false
		}
	}
	sp.done = sp.done || allDone
}

func find(list []corev1.ContainerStatus, name string) (corev1.ContainerStatus, bool) {
	for _, cs := range list {
		if cs.Name == name {
			return cs, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// startAttempt runs the containers; a zero duration ends them at once.
// Called with r.mu held.
func (r *Runtime) startAttempt(sp *simPod, now metav1.Time) {
	sp.started = now
	for i := range sp.ctrs {
		cs := &sp.ctrs[i]
		cs.RestartCount = int32(sp.attempt)
		cs.ContainerID = fmt.Sprintf("sim://%s/%s/%d", sp.uid, cs.Name, sp.attempt)
		cs.Started = ptr(true)
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
	}
	if sp.duration <= 0 {
		r.finishAttempt(sp, now)
		return
	}
	r.schedule(sp.uid, now.Add(sp.duration))
}

// finishAttempt terminates the containers and schedules a restart when
// the restart policy wants one. Called with r.mu held.
func (r *Runtime) finishAttempt(sp *simPod, now metav1.Time) {
	code := sp.exitCode
	if sp.killed {
		code = 143
	} else if sp.failures >= 0 && sp.attempt >= sp.failures {
		code = 0
	}
	for i := range sp.ctrs {
		cs := &sp.ctrs[i]
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason(code), StartedAt: sp.started, FinishedAt: now, ContainerID: cs.ContainerID}}
		cs.Started = ptr(false)
		cs.Ready = false
	}
	restart := !sp.killed && (sp.policy == corev1.RestartPolicyAlways || sp.policy == "" ||
		(sp.policy == corev1.RestartPolicyOnFailure && code != 0))
	if !restart {
		sp.done = true
		return
	}
	delay := sp.backoff
	sp.backoff = min(max(2*sp.backoff, 10*time.Second), 5*time.Minute)
	sp.attempt++
	if delay > 0 {
		for i := range sp.ctrs {
			cs := &sp.ctrs[i]
			cs.LastTerminationState = cs.State
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, cs.Name, sp.uid)}}
		}
	}
	r.schedule(sp.uid, now.Add(delay))
}

func reason(code int32) string {
	if code == 0 {
		return "Completed"
	}
	return "Error"
}

func terminated(c corev1.Container, code int32, start, end metav1.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, Started: ptr(false),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason(code), StartedAt: start, FinishedAt: end}}}
}

func ptr[T any](v T) *T { return &v }

func (r *Runtime) now() metav1.Time { return metav1.NewTime(r.clock.Now().Truncate(time.Second)) }

// fire handles a pod whose timer is due: an attempt ends or a restart
// begins.
func (r *Runtime) fire(uid types.UID) {
	r.mu.Lock()
	sp, ok := r.pods[uid]
	if !ok || sp.done {
		r.mu.Unlock()
		return
	}
	now := r.now()
	if sp.ctrs[0].State.Running != nil {
		r.finishAttempt(sp, now)
	} else {
		for i := range sp.ctrs {
			if t := sp.ctrs[i].State.Terminated; t != nil {
				sp.ctrs[i].LastTerminationState = sp.ctrs[i].State
			}
		}
		r.startAttempt(sp, now)
	}
	r.mu.Unlock()
	r.notify(uid)
}

// KillPod implements runtime.Runtime.
func (r *Runtime) KillPod(_ context.Context, uid types.UID, _ time.Duration) error {
	r.mu.Lock()
	sp, ok := r.pods[uid]
	if !ok || sp.done {
		r.mu.Unlock()
		return nil
	}
	sp.killed = true
	if sp.ctrs[0].State.Running != nil {
		r.finishAttempt(sp, r.now())
	}
	sp.done = true
	r.mu.Unlock()
	r.notify(uid)
	return nil
}

// PodStatus implements runtime.Runtime.
func (r *Runtime) PodStatus(uid types.UID) (runtime.PodStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sp, ok := r.pods[uid]
	if !ok {
		return runtime.PodStatus{}, false
	}
	st := runtime.PodStatus{Done: sp.done}
	for _, c := range sp.init {
		st.InitContainerStatuses = append(st.InitContainerStatuses, *c.DeepCopy())
	}
	for _, c := range sp.ctrs {
		st.ContainerStatuses = append(st.ContainerStatuses, *c.DeepCopy())
	}
	return st, true
}

// RemovePod implements runtime.Runtime.
func (r *Runtime) RemovePod(uid types.UID) {
	r.mu.Lock()
	delete(r.pods, uid)
	r.mu.Unlock()
}

// Subscribe implements runtime.Runtime.
func (r *Runtime) Subscribe(fn func(types.UID)) {
	r.mu.Lock()
	r.subs = append(r.subs, fn)
	r.mu.Unlock()
}

func (r *Runtime) notify(uid types.UID) {
	r.mu.Lock()
	subs := r.subs
	r.mu.Unlock()
	for _, fn := range subs {
		fn(uid)
	}
}

// Logs implements runtime.Runtime: simulated containers write nothing.
func (r *Runtime) Logs(_ context.Context, uid types.UID, container string, _ runtime.LogOptions, _ io.Writer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.pods[uid]; !ok {
		return fmt.Errorf("pod %s: %w", uid, runtime.ErrNotFound)
	}
	return nil
}

// Exec implements runtime.Runtime: a command "run" in a running simulated
// container succeeds at once and prints nothing, so exec readiness probes
// pass.
func (r *Runtime) Exec(_ context.Context, uid types.UID, container string, _ []string, _ runtime.ExecStreams) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	sp, ok := r.pods[uid]
	if !ok {
		return fmt.Errorf("pod %s: %w", uid, runtime.ErrNotFound)
	}
	for _, cs := range sp.ctrs {
		if cs.Name == container && cs.State.Running != nil {
			return nil
		}
	}
	return fmt.Errorf("container not found (%q): %w", container, runtime.ErrNotFound)
}

// SimulatedProbes tells the agent that network probes cannot reach
// simulated containers and count as passing.
func (r *Runtime) SimulatedProbes() bool { return true }

// schedule queues uid to fire at t. Called with r.mu held.
func (r *Runtime) schedule(uid types.UID, t time.Time) {
	heap.Push(&r.queue, due{at: t, uid: uid})
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// loop fires due pods with one timer for all of them.
func (r *Runtime) loop(ctx context.Context) {
	for {
		r.mu.Lock()
		var next time.Duration = -1
		var fire []types.UID
		now := r.clock.Now()
		for r.queue.Len() > 0 {
			d := r.queue[0]
			if d.at.After(now) {
				next = d.at.Sub(now)
				break
			}
			heap.Pop(&r.queue)
			fire = append(fire, d.uid)
		}
		r.mu.Unlock()
		for _, uid := range fire {
			r.fire(uid)
		}
		if len(fire) > 0 {
			continue
		}
		var timerC <-chan time.Time
		var t clock.Timer
		if next >= 0 {
			t = r.clock.NewTimer(next)
			timerC = t.C()
		}
		select {
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return
		case <-r.wake:
		case <-timerC:
		}
		if t != nil {
			t.Stop()
		}
	}
}

type due struct {
	at  time.Time
	uid types.UID
}

// dueQueue is a min-heap of due times.
type dueQueue []due

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q dueQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *dueQueue) Push(x any)        { *q = append(*q, x.(due)) }
func (q *dueQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
