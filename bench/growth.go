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

// The growth scenario's default sizes, issue 16's table: one Indexed Job
// of each number of completions (parallelism 1,000), then each number of
// concurrent Jobs of fleetJobPods pods.
var (
	defaultGrowthCompletions = []int{10_000, 100_000, 1_000_000}
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
	label string
	pods  int
	wall  time.Duration
	// cpu is the server process's CPU over the measured part.
	cpu time.Duration
	// peakRSS is the whole resident set's peak, peakAnon its anonymous
	// part's (the store's file-backed mmap apart), in MB.
	peakRSS, peakAnon float64
}

// runGrowth measures how pods/s, peak RSS and CPU per pod change with the
// size of one Job and with the number of small Jobs, each row on a fresh
// control plane (sim runtime) in the same run.
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
		row, err := r.runGrowthJob(ctx, n)
		if err != nil {
			return res, fmt.Errorf("%d completions: %w", n, err)
		}
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
		res.add(row.label+": "+metricPeakRSS, row.peakRSS, "MB")
		res.add(row.label+": "+metricPeakAnon, row.peakAnon, "MB")
		res.add(row.label+": CPU per pod", row.cpuPerPod(), "ms")
	}
	res.Target, res.Met = "a table: pods/s, peak RSS (total and anon) and server CPU per pod per size (cost should grow linearly with live work, not with history)", true
	res.Checks = append(res.Checks, "every Job Complete=True with every pod succeeded")
	res.Notes = append(res.Notes, podGCNote(r.cfg))
	return res, nil
}

// runGrowthJob is one single-Job row: an Indexed Job of n completions.
func (r *runner) runGrowthJob(ctx context.Context, n int) (growthRow, error) {
	jr := jobRun{name: fmt.Sprintf("growth-%d", n), runtime: "sim", completions: n, parallelism: min(n, growthParallel)}
	row := growthRow{label: fmt.Sprintf("1 Job x %d completions (parallelism %d)", n, jr.parallelism), pods: n}
	one, err := r.runJob(ctx, jr)
	if err != nil {
		return row, err
	}
	wall, _ := one.Metric("wall")
	cpu, _ := one.Metric("CPU (server, run)")
	row.wall = time.Duration(wall * float64(time.Second))
	row.cpu = time.Duration(cpu * float64(time.Second))
	row.peakRSS, _ = one.Metric(metricPeakRSS)
	row.peakAnon, _ = one.Metric(metricPeakAnon)
	return row, nil
}

// podGCNote names the pod GC policy the Jobs ran under, which decides how
// many terminated pods stay stored and so the memory.
func podGCNote(cfg Config) string {
	policy := cfg.TerminatedPodGCPolicy
	if policy == "" {
		policy = "threshold"
	}
	threshold := "12500 (upstream's)"
	if cfg.TerminatedPodGCThreshold != 0 {
		threshold = fmt.Sprint(cfg.TerminatedPodGCThreshold)
	}
	return fmt.Sprintf("pod GC: --terminated-pod-gc-policy %s, --terminated-pod-gc-threshold %s", policy, threshold)
}

func (g growthRow) podsPerSecond() float64 {
	if g.wall <= 0 {
		return 0
	}
	return float64(g.pods) / g.wall.Seconds()
}

// cpuPerPod is the server's CPU per pod in ms.
func (g growthRow) cpuPerPod() float64 {
	if g.pods == 0 {
		return 0
	}
	return float64(g.cpu) / float64(time.Millisecond) / float64(g.pods)
}

func (g growthRow) String() string {
	return fmt.Sprintf("%s: %.0f pods/s, peak RSS %.0f MB (anon %.0f MB), CPU %.3f ms/pod, wall %s",
		g.label, g.podsPerSecond(), g.peakRSS, g.peakAnon, g.cpuPerPod(), g.wall.Round(time.Millisecond))
}

// runFleet creates n Jobs of fleetJobPods pods each at once on a fresh
// control plane and times them from the first create to the last Complete.
func (r *runner) runFleet(ctx context.Context, n int) (growthRow, error) {
	name := fmt.Sprintf("fleet-%d", n)
	row := growthRow{label: fmt.Sprintf("%d Jobs x %d pods", n, fleetJobPods), pods: n * fleetJobPods}
	mem := startMemSampler(r)
	defer mem.finish() // on the error paths; a second finish is harmless
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
	u0 := takeUsage()
	start := u0.wall
	if err := createFleet(ctx, kube, name, n); err != nil {
		return row, err
	}
	r.progress("%s: %d Jobs created in %s", name, n, time.Since(start).Round(time.Millisecond))
	stopReports := r.every(time.Minute, func() { r.progress("%s: %s", name, fo.progress()) })
	doneAt, err := fo.wait(ctx)
	stopReports()
	stopProfile()
	u1 := takeUsage()
	peaks := mem.finish()
	r.heapProfile(name, &prof)
	stopWatch()
	fo.wg.Wait()
	if err != nil {
		return row, err
	}
	row.wall = doneAt.Sub(start)
	row.cpu = u1.cpu - u0.cpu
	row.peakRSS, row.peakAnon = mb(peaks.HWM), mb(peaks.Anon)
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
