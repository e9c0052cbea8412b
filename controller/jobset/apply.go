package jobset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
)

// maxParallelism bounds concurrent Job creations and deletions.
const maxParallelism = 50

// apply carries out a plan: deletions, the Service, creations, suspend and
// resume updates, then one status update, then the queued events.
func (c *Controller) apply(ctx context.Context, p *plan, log *slog.Logger) error {
	if err := c.deleteJobs(ctx, p.deleteJobs, log); err != nil {
		return err
	}
	if p.deleteJobSet {
		return c.deleteJobSet(ctx, p, log)
	}
	if err := c.createService(ctx, p, log); err != nil {
		return err
	}
	if err := c.createJobs(ctx, p, log); err != nil {
		return err
	}
	if err := c.updateJobs(ctx, p); err != nil {
		return err
	}
	return c.updateStatus(ctx, p)
}

func (c *Controller) deleteJobs(ctx context.Context, jobs []*batchv1.Job, log *slog.Logger) error {
	fg := metav1.DeletePropagationForeground
	errs := parallel(ctx, len(jobs), func(i int) error {
		job := jobs[i]
		err := c.kube.BatchV1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
			PropagationPolicy: &fg,
			Preconditions:     &metav1.Preconditions{UID: &job.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete job %s: %w", job.Name, err)
		}
		log.Debug("deleted job", "job", job.Name, "restartAttempt", job.Labels[restartsKey])
		return nil
	})
	return errors.Join(errs...)
}

// deleteJobSet deletes an expired JobSet (foreground, like upstream's TTL).
func (c *Controller) deleteJobSet(ctx context.Context, p *plan, log *slog.Logger) error {
	fg := metav1.DeletePropagationForeground
	err := c.jobsets.JobsetV1alpha2().JobSets(p.js.Namespace).Delete(ctx, p.js.Name, metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete jobset %s/%s after ttl: %w", p.js.Namespace, p.js.Name, err)
	}
	log.Info("deleted jobset after ttl")
	return nil
}

func (c *Controller) createService(ctx context.Context, p *plan, log *slog.Logger) error {
	if p.createService == nil {
		return nil
	}
	_, err := c.kube.CoreV1().Services(p.js.Namespace).Create(ctx, p.createService, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		c.recorder.Eventf(p.js, corev1.EventTypeWarning, reasonHeadlessServiceCreationFailed, "%s", err.Error())
		return fmt.Errorf("create headless service %s: %w", p.createService.Name, err)
	}
	log.Debug("created headless service", "service", p.createService.Name)
	return nil
}

// createJobs creates the planned Jobs; a Job that already exists (stale
// cache) is not an error. Failures raise one JobCreationFailed event.
func (c *Controller) createJobs(ctx context.Context, p *plan, log *slog.Logger) error {
	errs := parallel(ctx, len(p.createJobs), func(i int) error {
		job := p.createJobs[i]
		_, err := c.kube.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("job %q creation failed with error: %w", job.Name, err)
		}
		log.Debug("created job", "job", job.Name)
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		c.recorder.Eventf(p.js, corev1.EventTypeWarning, reasonJobCreationFailed, "%s", err.Error())
		return err
	}
	return nil
}

// updateJobs writes suspend and resume changes. A started Job's startTime
// is cleared first (status) so its template may change.
func (c *Controller) updateJobs(ctx context.Context, p *plan) error {
	for _, job := range p.jobsToSuspend {
		if _, err := c.kube.BatchV1().Jobs(job.Namespace).Update(ctx, job, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("suspend job %s: %w", job.Name, err)
		}
	}
	for _, job := range p.jobsToResume {
		if err := c.resumeJob(ctx, job); err != nil {
			return err
		}
	}
	return nil
}

func (c *Controller) resumeJob(ctx context.Context, job *batchv1.Job) error {
	jobs := c.kube.BatchV1().Jobs(job.Namespace)
	if job.Status.StartTime != nil {
		cleared := job.DeepCopy()
		cleared.Status.StartTime = nil
		updated, err := jobs.UpdateStatus(ctx, cleared, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("clear start time of job %s: %w", job.Name, err)
		}
		job = job.DeepCopy()
		job.ResourceVersion = updated.ResourceVersion
		job.Status = updated.Status
	}
	if _, err := jobs.Update(ctx, job, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("resume job %s: %w", job.Name, err)
	}
	return nil
}

// updateStatus writes the JobSet status once and, if that succeeded,
// emits the queued events and counts finished JobSets.
func (c *Controller) updateStatus(ctx context.Context, p *plan) error {
	if !p.updateStatus {
		return nil
	}
	from := p.js.ResourceVersion
	updated, err := c.jobsets.JobsetV1alpha2().JobSets(p.js.Namespace).UpdateStatus(ctx, p.js, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of jobset %s/%s: %w", p.js.Namespace, p.js.Name, err)
	}
	c.written.Wrote(p.js.Namespace+"/"+p.js.Name, from, updated.ResourceVersion)
	c.metrics.record(p)
	for _, e := range p.events {
		c.recorder.Eventf(p.js, e.Type, e.Reason, "%s", e.Message)
	}
	return nil
}

// parallel runs fn for 0..n-1 with bounded concurrency and collects errors.
func parallel(ctx context.Context, n int, fn func(i int) error) []error {
	var mu sync.Mutex
	var errs []error
	workqueue.ParallelizeUntil(ctx, maxParallelism, n, func(i int) {
		if err := fn(i); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	return errs
}
