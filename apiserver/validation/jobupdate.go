package validation

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// ValidateJobUpdate checks an update of the main Job resource as the Job
// strategy's ValidateUpdate does: the new Job must be valid, and selector,
// template (outside the carve-outs for suspended never-started Jobs),
// completionMode, podFailurePolicy, backoffLimitPerIndex, managedBy and
// successPolicy are immutable; completions may change only for an Indexed
// Job in tandem with parallelism.
func ValidateJobUpdate(newJob, oldJob *batchv1.Job) field.ErrorList {
	_, hadName := oldJob.Spec.Template.Labels[batchv1.JobNameLabel]
	_, hadUID := oldJob.Spec.Template.Labels[batchv1.ControllerUidLabel]
	opts := jobOptions{
		requirePrefixedLabels:    hadName && hadUID,
		allowMutableSchedulingOn: ptr.Deref(oldJob.Spec.Suspend, false) && oldJob.Status.StartTime == nil,
	}
	allErrs := validateJob(newJob, opts)
	allErrs = append(allErrs, ValidateObjectMetaUpdate(&newJob.ObjectMeta, &oldJob.ObjectMeta, field.NewPath("metadata"))...)
	allErrs = append(allErrs, validateJobSpecUpdate(&newJob.Spec, &oldJob.Spec, field.NewPath("spec"), opts)...)
	return allErrs
}

func validateJobSpecUpdate(spec, oldSpec *batchv1.JobSpec, fldPath *field.Path, opts jobOptions) field.ErrorList {
	allErrs := validateJobSpecWithSelector(spec, fldPath)
	allErrs = append(allErrs, validateCompletionsUpdate(spec, oldSpec, fldPath.Child("completions"))...)
	allErrs = append(allErrs, validateImmutable(spec.Selector, oldSpec.Selector, fldPath.Child("selector"))...)
	allErrs = append(allErrs, validatePodTemplateUpdate(spec, oldSpec, fldPath, opts)...)
	allErrs = append(allErrs, validateImmutable(spec.CompletionMode, oldSpec.CompletionMode, fldPath.Child("completionMode"))...)
	allErrs = append(allErrs, validateImmutable(spec.PodFailurePolicy, oldSpec.PodFailurePolicy, fldPath.Child("podFailurePolicy"))...)
	allErrs = append(allErrs, validateImmutable(spec.BackoffLimitPerIndex, oldSpec.BackoffLimitPerIndex, fldPath.Child("backoffLimitPerIndex"))...)
	allErrs = append(allErrs, validateImmutable(spec.ManagedBy, oldSpec.ManagedBy, fldPath.Child("managedBy"))...)
	allErrs = append(allErrs, validateImmutable(spec.SuccessPolicy, oldSpec.SuccessPolicy, fldPath.Child("successPolicy"))...)
	return allErrs
}

func validateCompletionsUpdate(spec, oldSpec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	if !isIndexed(spec) {
		return validateImmutable(spec.Completions, oldSpec.Completions, fldPath)
	}
	if apiequality.Semantic.DeepEqual(spec.Completions, oldSpec.Completions) || spec.Completions == nil {
		return nil
	}
	if spec.Parallelism == nil || *spec.Completions != *spec.Parallelism {
		return field.ErrorList{field.Invalid(fldPath, spec.Completions,
			fmt.Sprintf("can only be modified in tandem with %s", fldPath.Root().Child("parallelism").String()))}
	}
	return nil
}

func validatePodTemplateUpdate(spec, oldSpec *batchv1.JobSpec, fldPath *field.Path, opts jobOptions) field.ErrorList {
	template := &spec.Template
	oldTemplate := &oldSpec.Template
	if opts.allowMutableSchedulingOn {
		oldTemplate = oldSpec.Template.DeepCopy()
		switch {
		case template.Spec.Affinity == nil && oldTemplate.Spec.Affinity != nil:
			oldTemplate.Spec.Affinity.NodeAffinity = nil
			if *oldTemplate.Spec.Affinity == (corev1.Affinity{}) {
				oldTemplate.Spec.Affinity = nil
			}
		case template.Spec.Affinity != nil && oldTemplate.Spec.Affinity == nil:
			oldTemplate.Spec.Affinity = &corev1.Affinity{NodeAffinity: template.Spec.Affinity.NodeAffinity}
		case template.Spec.Affinity != nil && oldTemplate.Spec.Affinity != nil:
			oldTemplate.Spec.Affinity.NodeAffinity = template.Spec.Affinity.NodeAffinity
		}
		oldTemplate.Spec.NodeSelector = template.Spec.NodeSelector
		oldTemplate.Spec.Tolerations = template.Spec.Tolerations
		oldTemplate.Annotations = template.Annotations
		oldTemplate.Labels = template.Labels
		oldTemplate.Spec.SchedulingGates = template.Spec.SchedulingGates
	}
	return validateImmutable(template, oldTemplate, fldPath.Child("template"))
}
