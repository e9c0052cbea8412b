package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/batchlet/batchlet/controlplane"
)

// jobObserver timestamps, from its own watches, when each pod index of one
// Indexed Job appears, starts, exits and is counted in the Job's
// completedIndexes. Creation timestamps have 1 s resolution; these have the
// watch's.
type jobObserver struct {
	origin    time.Time
	trackPods bool

	created, started, exited, counted stamps
	exits                             atomic.Int64 // pods seen terminal

	wg       sync.WaitGroup
	prev     []interval
	doneOnce sync.Once
	done     chan struct{}
	doneAt   time.Time
	final    *batchv1.Job
	last     atomic.Pointer[batchv1.Job] // newest Job seen, for progress
	errMu    sync.Mutex
	err      error
}

func newJobObserver(n int, trackPods bool) *jobObserver {
	o := &jobObserver{origin: time.Now(), trackPods: trackPods, done: make(chan struct{})}
	if trackPods {
		o.created, o.started, o.exited, o.counted = newStamps(n), newStamps(n), newStamps(n), newStamps(n)
	}
	return o
}

// stopped waits until the watches, whose context the caller cancelled,
// have ended, so the stamps can be read without a race.
func (o *jobObserver) stopped() { o.wg.Wait() }

// start opens the watches at the current resource version, before the Job
// exists, so no event is missed. With local (the embedded control plane's
// store), the observer watches in-process and decodes nothing: what it
// costs is then not counted as the control plane's CPU. Without, it
// watches over the API like any client.
func (o *jobObserver) start(ctx context.Context, kube kubernetes.Interface, local controlplane.LocalSource, ns, name string) error {
	list, err := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("list jobs for a resource version: %w", err)
	}
	rv := list.ResourceVersion
	if local != nil {
		return o.startLocal(ctx, local, rv, ns, name)
	}
	jobs := kube.BatchV1().RESTClient()
	o.follow(ctx, rv, func() *rest.Request {
		return jobs.Get().Namespace(ns).Resource("jobs").Param("fieldSelector", "metadata.name="+name)
	}, o.onJob)
	if o.trackPods {
		pods := kube.CoreV1().RESTClient()
		o.follow(ctx, rv, func() *rest.Request {
			return pods.Get().Namespace(ns).Resource("pods").Param("labelSelector", "batch.kubernetes.io/job-name="+name)
		}, o.onPod)
	}
	return nil
}

// follow runs a watch in the background; stopped() waits for it after the
// caller cancels ctx.
func (o *jobObserver) follow(ctx context.Context, rv string, newReq func() *rest.Request, fn func(time.Time, []byte)) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		if err := rawWatch(ctx, newReq, rv, fn); err != nil {
			o.fail(err)
		}
	}()
}

func (o *jobObserver) fail(err error) {
	o.errMu.Lock()
	if o.err == nil {
		o.err = err
	}
	o.errMu.Unlock()
}

// podLite is the part of a pod the observer reads.
type podLite struct {
	Metadata struct {
		Annotations struct {
			Index string `json:"batch.kubernetes.io/job-completion-index"`
		} `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		Phase corev1.PodPhase `json:"phase"`
	} `json:"status"`
}

func (o *jobObserver) onPod(now time.Time, raw []byte) {
	var pod podLite
	if err := json.Unmarshal(raw, &pod); err != nil {
		o.fail(fmt.Errorf("decode pod event: %w", err))
		return
	}
	o.podSeen(now, pod.Metadata.Annotations.Index, pod.Status.Phase)
}

// podSeen stamps what one pod event shows: the pod exists, has started,
// has exited.
func (o *jobObserver) podSeen(now time.Time, index string, phase corev1.PodPhase) {
	i, err := strconv.Atoi(index)
	if err != nil {
		return
	}
	o.created.mark(i, o.origin, now)
	switch phase {
	case corev1.PodRunning:
		o.started.mark(i, o.origin, now)
	case corev1.PodSucceeded, corev1.PodFailed:
		// Instant containers may skip Running: their first terminal status
		// is also when they were first seen started.
		o.started.mark(i, o.origin, now)
		if o.exited[i] == 0 {
			o.exits.Add(1)
		}
		o.exited.mark(i, o.origin, now)
	}
}

func (o *jobObserver) onJob(now time.Time, raw []byte) {
	job := &batchv1.Job{}
	if err := json.Unmarshal(raw, job); err != nil {
		o.fail(fmt.Errorf("decode job event: %w", err))
		return
	}
	o.jobSeen(now, job)
}

// jobSeen stamps the indexes a Job event newly counts and notices the end.
func (o *jobObserver) jobSeen(now time.Time, job *batchv1.Job) {
	o.last.Store(job)
	if o.trackPods {
		cur, err := parseIndexes(job.Status.CompletedIndexes)
		if err != nil {
			o.fail(err)
			return
		}
		eachNew(o.prev, cur, func(i int) { o.counted.mark(i, o.origin, now) })
		o.prev = cur
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			o.doneOnce.Do(func() {
				o.doneAt, o.final = now, job
				close(o.done)
			})
		}
	}
}

// wait blocks until the Job finishes (Complete or Failed) or ctx ends.
func (o *jobObserver) wait(ctx context.Context) (*batchv1.Job, time.Time, error) {
	select {
	case <-o.done:
		return o.final, o.doneAt, nil
	case <-ctx.Done():
		o.errMu.Lock()
		defer o.errMu.Unlock()
		if o.err != nil {
			return nil, time.Time{}, fmt.Errorf("job did not finish: %w, %s (last watch error: %v)", ctx.Err(), o.progress(), o.err)
		}
		return nil, time.Time{}, fmt.Errorf("job did not finish: %w, %s", ctx.Err(), o.progress())
	}
}

// drainPods waits until the pod watch has seen n terminal pods, at most
// grace, so the latency figures are not cut short by a lagging watch.
func (o *jobObserver) drainPods(n int, grace time.Duration) {
	if !o.trackPods {
		return
	}
	deadline := time.Now().Add(grace)
	for o.exits.Load() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// succeeded is the newest Job status's succeeded count.
func (o *jobObserver) succeeded() int {
	if job := o.last.Load(); job != nil {
		return int(job.Status.Succeeded)
	}
	return 0
}

// progress says how far the Job is, from the newest Job event seen.
func (o *jobObserver) progress() string {
	job := o.last.Load()
	if job == nil {
		return "no Job status seen yet"
	}
	st := job.Status
	return fmt.Sprintf("after %s: succeeded %d, failed %d, active %d",
		time.Since(o.origin).Round(time.Second), st.Succeeded, st.Failed, st.Active)
}
