package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

const completionIndexAnnotation = "batch.kubernetes.io/job-completion-index"

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
// exists, so no event is missed.
func (o *jobObserver) start(ctx context.Context, kube kubernetes.Interface, ns, name string) error {
	list, err := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("list jobs for a resource version: %w", err)
	}
	rv := list.ResourceVersion
	jobSel := fields.OneTermEqualSelector("metadata.name", name).String()
	jw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = jobSel
			return kube.BatchV1().Jobs(ns).Watch(ctx, opts)
		},
	})
	if err != nil {
		return fmt.Errorf("watch job %s/%s: %w", ns, name, err)
	}
	o.wg.Add(1)
	go o.consume(jw, o.onJob)
	if !o.trackPods {
		return nil
	}
	podSel := "batch.kubernetes.io/job-name=" + name
	pw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = podSel
			return kube.CoreV1().Pods(ns).Watch(ctx, opts)
		},
	})
	if err != nil {
		return fmt.Errorf("watch pods of job %s/%s: %w", ns, name, err)
	}
	o.wg.Add(1)
	go o.consume(pw, o.onPod)
	return nil
}

// consume feeds events to fn until the watch ends (its context is
// cancelled); stop() waits for that.
func (o *jobObserver) consume(w watch.Interface, fn func(time.Time, any)) {
	defer o.wg.Done()
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			o.fail(fmt.Errorf("watch error: %v", ev.Object))
			continue
		}
		fn(time.Now(), ev.Object)
	}
}

func (o *jobObserver) fail(err error) {
	o.errMu.Lock()
	if o.err == nil {
		o.err = err
	}
	o.errMu.Unlock()
}

func (o *jobObserver) onPod(now time.Time, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	i, err := strconv.Atoi(pod.Annotations[completionIndexAnnotation])
	if err != nil {
		return
	}
	o.created.mark(i, o.origin, now)
	switch pod.Status.Phase {
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

func (o *jobObserver) onJob(now time.Time, obj any) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
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
				o.doneAt, o.final = now, job.DeepCopy()
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
			return nil, time.Time{}, fmt.Errorf("job did not finish: %w (last watch error: %v)", ctx.Err(), o.err)
		}
		return nil, time.Time{}, fmt.Errorf("job did not finish: %w", ctx.Err())
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
