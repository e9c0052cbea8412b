package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The growth scenario's default sizes: one Indexed Job of each number of
// completions (parallelism 1,000), then each number of concurrent Jobs of
// fleetJobPods pods.
var (
	defaultGrowthCompletions = []int{10_000, 100_000}
	defaultGrowthJobs        = []int{1, 100, 10_000}
)

const (
	fleetJobPods     = 10
	growthParallel   = 1_000
	fleetCreateConns = 8 // concurrent Job creates, so the client is not the limit
	fleetLabel       = "batchlet.dev/bench-fleet"
)

// growthRow is one line of the growth table.
type growthRow struct {
	label   string
	pods    int
	wall    time.Duration
	peakRSS float64
}

// runGrowth measures how pods/s and peak RSS change with the size of one
// Job and with the number of small Jobs, each row on a fresh control plane
// (sim runtime) in the same run.
func runGrowth(ctx context.Context, r *runner) (Result, error) {
	completions, jobs := r.cfg.GrowthCompletions, r.cfg.GrowthJobs
	if len(completions) == 0 && len(jobs) == 0 {
		completions, jobs = defaultGrowthCompletions, defaultGrowthJobs
	}
	res := Result{Params: map[string]int{"rows": len(completions) + len(jobs)}}
	// Each row writes its own profiles, named after the row.
	single := r.single
	r.single = false
	defer func() { r.single = single }()
	var rows []growthRow
	for _, n := range completions {
		jr := jobRun{name: fmt.Sprintf("growth-%d", n), runtime: "sim", completions: n, parallelism: min(n, growthParallel)}
		one, err := r.runJob(ctx, jr)
		if err != nil {
			return res, fmt.Errorf("%d completions: %w", n, err)
		}
		wall, _ := one.Metric("wall")
		peak, _ := one.Metric("peak RSS")
		row := growthRow{label: fmt.Sprintf("1 Job x %d completions (parallelism %d)", n, jr.parallelism), pods: n,
			wall: time.Duration(wall * float64(time.Second)), peakRSS: peak}
		rows = append(rows, row)
		r.progress("growth: %s", row)
	}
	for _, n := range jobs {
		row, err := r.runFleet(ctx, n)
		if err != nil {
			return res, fmt.Errorf("%d Jobs: %w", n, err)
		}
		rows = append(rows, row)
		r.progress("growth: %s", row)
	}
	for _, row := range rows {
		res.add(row.label+": pods/s", row.podsPerSecond(), "pods/s")
		res.add(row.label+": peak RSS", row.peakRSS, "MB")
	}
	res.Target, res.Met = "a table: pods/s and peak RSS per size (cost should grow linearly with live work, not with history)", true
	res.Checks = append(res.Checks, "every Job Complete=True with every pod succeeded")
	return res, nil
}

func (g growthRow) podsPerSecond() float64 {
	if g.wall <= 0 {
		return 0
	}
	return float64(g.pods) / g.wall.Seconds()
}

func (g growthRow) String() string {
	return fmt.Sprintf("%s: %.0f pods/s, peak RSS %.0f MB, wall %s", g.label, g.podsPerSecond(), g.peakRSS, g.wall.Round(time.Millisecond))
}

// runFleet creates n Jobs of fleetJobPods pods each at once on a fresh
// control plane and times them from the first create to the last Complete.
func (r *runner) runFleet(ctx context.Context, n int) (growthRow, error) {
	name := fmt.Sprintf("fleet-%d", n)
	row := growthRow{label: fmt.Sprintf("%d Jobs x %d pods", n, fleetJobPods), pods: n * fleetJobPods}
	resetPeakRSS()
	cp, kube, _, stop, err := r.startServer(ctx, name, "sim")
	if err != nil {
		return row, err
	}
	defer stop()
	lw, err := cp.LocalSource().LocalListerWatcher(schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, "default", false,
		func(opts *metav1.ListOptions) { opts.LabelSelector = fleetLabel + "=" + name })
	if err != nil {
		return row, fmt.Errorf("watch jobs: %w", err)
	}
	list, err := kube.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return row, fmt.Errorf("list jobs for a resource version: %w", err)
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	fo := newFleetObserver(n)
	followLocal(wctx, &fo.wg, fo.fail, lw, list.ResourceVersion, func(now time.Time, obj runtime.Object) {
		if job, ok := obj.(*batchv1.Job); ok {
			fo.jobSeen(now, job)
		}
	})
	var prof Result
	stopProfile, err := r.profile(name, &prof)
	if err != nil {
		return row, err
	}
	stopProfile = sync.OnceFunc(stopProfile) // stopped on every return
	defer stopProfile()
	start := time.Now()
	if err := createFleet(ctx, kube, name, n); err != nil {
		return row, err
	}
	r.progress("%s: %d Jobs created in %s", name, n, time.Since(start).Round(time.Millisecond))
	stopReports := r.every(time.Minute, func() { r.progress("%s: %s", name, fo.progress()) })
	doneAt, err := fo.wait(ctx)
	stopReports()
	stopProfile()
	r.heapProfile(name, &prof)
	stopWatch()
	fo.wg.Wait()
	if err != nil {
		return row, err
	}
	row.wall = doneAt.Sub(start)
	row.peakRSS, _ = memMB()
	return row, nil
}

// createFleet creates n Jobs named <name>-<i> over fleetCreateConns
// concurrent calls.
func createFleet(ctx context.Context, kube kubernetes.Interface, name string, n int) error {
	return inParallel(n, fleetCreateConns, func(i int) error {
		if _, err := kube.BatchV1().Jobs("default").Create(ctx, fleetJob(name, i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create job %s-%d: %w", name, i, err)
		}
		return nil
	})
}

// fleetJob is one small Job of the fleet: fleetJobPods `true` pods, all at once.
func fleetJob(name string, i int) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: "default", Labels: map[string]string{fleetLabel: name}},
		Spec: batchv1.JobSpec{
			Completions:  ptr.To(int32(fleetJobPods)),
			Parallelism:  ptr.To(int32(fleetJobPods)),
			BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "true", Image: "busybox", Command: []string{"true"}}},
			}},
		},
	}
}

// fleetObserver counts the fleet's Jobs that finished.
type fleetObserver struct {
	want int
	wg   sync.WaitGroup
	mu   sync.Mutex
	// finished maps a finished Job to whether it completed (not failed).
	finished map[string]bool
	doneAt   time.Time
	done     chan struct{}
	err      error
}

func newFleetObserver(want int) *fleetObserver {
	return &fleetObserver{want: want, finished: map[string]bool{}, done: make(chan struct{})}
}

func (f *fleetObserver) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

// jobSeen records a Job that reached Complete or Failed; the want-th
// closes done.
func (f *fleetObserver) jobSeen(now time.Time, job *batchv1.Job) {
	finished, complete := jobFinished(job)
	if !finished {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, seen := f.finished[job.Name]; seen {
		return
	}
	f.finished[job.Name] = complete && int(job.Status.Succeeded) == fleetJobPods
	if len(f.finished) == f.want {
		f.doneAt = now
		close(f.done)
	}
}

func jobFinished(job *batchv1.Job) (finished, complete bool) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, true
		case batchv1.JobFailed:
			return true, false
		}
	}
	return false, false
}

// wait blocks until every Job finished, and fails unless all completed.
func (f *fleetObserver) wait(ctx context.Context) (time.Time, error) {
	select {
	case <-f.done:
	case <-ctx.Done():
		f.mu.Lock()
		defer f.mu.Unlock()
		return time.Time{}, fmt.Errorf("jobs did not finish: %w, %d of %d finished (last watch error: %v)", ctx.Err(), len(f.finished), f.want, f.err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, ok := range f.finished {
		if !ok {
			return time.Time{}, fmt.Errorf("job %s finished without Complete=True and %d succeeded", name, fleetJobPods)
		}
	}
	return f.doneAt, nil
}

func (f *fleetObserver) progress() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("%d of %d Jobs finished", len(f.finished), f.want)
}
