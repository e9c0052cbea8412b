package registry

import (
	"fmt"
	"strconv"
	"time"

	"github.com/batchlet/batchlet/apiserver/defaults"
	"github.com/batchlet/batchlet/apiserver/validation"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Jobs is batch/v1 jobs.
func Jobs() *Resource {
	return &Resource{
		GVR: batchv1.SchemeGroupVersion.WithResource("jobs"), Kind: "Job", Singular: "job", Namespaced: true,
		Categories: []string{"all"}, Subresources: []string{"status"},
		New:     func() runtime.Object { return &batchv1.Job{} },
		NewList: func() runtime.Object { return &batchv1.JobList{} },
		HasSpec: true, OrphanByDefault: true,
		PrepareForCreate: func(obj runtime.Object) {
			job := obj.(*batchv1.Job)
			job.Status = batchv1.JobStatus{}
			defaults.Job(job)
			defaults.PrepareJobForCreate(job)
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			job := obj.(*batchv1.Job)
			job.Status = old.(*batchv1.Job).Status
			defaults.Job(job)
		},
		PrepareForStatusUpdate: func(obj, old runtime.Object) { obj.(*batchv1.Job).Spec = old.(*batchv1.Job).Spec },
		Validate:               func(obj runtime.Object) field.ErrorList { return validation.ValidateJob(obj.(*batchv1.Job)) },
		// ValidateJobUpdate and ValidateJobStatusUpdate make the object-meta
		// update checks, in upstream's order (the new Job's checks first on
		// a main-resource update); once: a second run listed each
		// metadata error twice.
		ValidateUpdateChecksMeta: true,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateJobUpdate(obj.(*batchv1.Job), old.(*batchv1.Job))
		},
		ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateJobStatusUpdate(obj.(*batchv1.Job), old.(*batchv1.Job))
		},
		Fields: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
		},
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Status", "Status of the job."),
			col("Completions", batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
			col("Duration", "Time required to complete the job."),
			ageColumn(),
			wideCol("Containers", "Names of each container in the template."),
			wideCol("Images", "Images referenced by each container in the template."),
			wideCol("Selector", batchv1.JobSpec{}.SwaggerDoc()["selector"]),
		},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow { return jobRow(obj.(*batchv1.Job), now) },
	}
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func jobRow(job *batchv1.Job, now time.Time) metav1.TableRow {
	completions := fmt.Sprintf("%d/1", job.Status.Succeeded)
	switch {
	case job.Spec.Completions != nil:
		completions = fmt.Sprintf("%d/%d", job.Status.Succeeded, *job.Spec.Completions)
	case job.Spec.Parallelism != nil && *job.Spec.Parallelism > 1:
		completions = fmt.Sprintf("%d/1 of %d", job.Status.Succeeded, *job.Spec.Parallelism)
	}
	took := ""
	switch {
	case job.Status.StartTime == nil:
	case job.Status.CompletionTime == nil:
		took = duration.HumanDuration(now.Sub(job.Status.StartTime.Time))
	default:
		took = duration.HumanDuration(job.Status.CompletionTime.Sub(job.Status.StartTime.Time))
	}
	status := "Running"
	switch {
	case jobCondition(job, batchv1.JobComplete):
		status = "Complete"
	case jobCondition(job, batchv1.JobFailed):
		status = "Failed"
	case job.DeletionTimestamp != nil:
		status = "Terminating"
	case jobCondition(job, batchv1.JobSuspended):
		status = "Suspended"
	case jobCondition(job, batchv1.JobFailureTarget):
		status = "FailureTarget"
	case jobCondition(job, batchv1.JobSuccessCriteriaMet):
		status = "SuccessCriteriaMet"
	}
	names, images := containerCells(job.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []interface{}{job.Name, status, completions, took, since(job.CreationTimestamp, now),
		names, images, metav1.FormatLabelSelector(job.Spec.Selector)}}
}
