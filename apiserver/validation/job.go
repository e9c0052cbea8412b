package validation

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

const (
	maxParallelismForIndexedJob             = 100000
	maxFailedIndexesForIndexedJob           = 100_000
	completionsSoftLimit                    = 100_000
	parallelismLimitForHighCompletions      = 10_000
	maxFailedIndexesLimitForHighCompletions = 10_000
	maxManagedByLength                      = 63
)

// jobOptions are the knobs the Job registry strategy sets (all on for a
// current kube-apiserver on create).
type jobOptions struct {
	requirePrefixedLabels    bool
	allowMutableSchedulingOn bool
}

// ValidateJob checks a new Job as the Job strategy's Validate does.
func ValidateJob(job *batchv1.Job) field.ErrorList {
	return validateJob(job, jobOptions{requirePrefixedLabels: true})
}

func validateJob(job *batchv1.Job, opts jobOptions) field.ErrorList {
	allErrs := ValidateObjectMeta(&job.ObjectMeta, true, true, field.NewPath("metadata"))
	allErrs = append(allErrs, validateGeneratedSelector(job, opts.requirePrefixedLabels)...)
	allErrs = append(allErrs, validateJobSpecWithSelector(&job.Spec, field.NewPath("spec"))...)
	spec := &job.Spec
	if isIndexed(spec) && spec.Completions != nil && *spec.Completions > 0 {
		host := fmt.Sprintf("%s-%d", job.Name, *spec.Completions-1)
		if len(validation.IsDNS1123Label(host)) > 0 {
			allErrs = append(allErrs, field.Invalid(field.NewPath("metadata").Child("name"), job.Name,
				fmt.Sprintf("will not able to create pod with invalid DNS label: %s", host)))
		}
	}
	return allErrs
}

func isIndexed(spec *batchv1.JobSpec) bool {
	return ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
}

// validateGeneratedSelector checks that a generated selector and the
// template labels match the Job's name and uid.
func validateGeneratedSelector(job *batchv1.Job, prefixed bool) field.ErrorList {
	if ptr.Deref(job.Spec.ManualSelector, false) || job.Spec.Selector == nil {
		return nil
	}
	var allErrs field.ErrorList
	if job.UID == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("metadata").Child("uid"), ""))
	}
	tmplPath := field.NewPath("spec").Child("template").Child("metadata")
	meta := job.Spec.Template.ObjectMeta
	allErrs = append(allErrs, validateHasLabel(meta, tmplPath, "controller-uid", string(job.UID))...)
	allErrs = append(allErrs, validateHasLabel(meta, tmplPath, "job-name", job.Name)...)
	expected := map[string]string{"controller-uid": string(job.UID), "job-name": job.Name}
	if prefixed {
		allErrs = append(allErrs, validateHasLabel(meta, tmplPath, batchv1.ControllerUidLabel, string(job.UID))...)
		allErrs = append(allErrs, validateHasLabel(meta, tmplPath, batchv1.JobNameLabel, job.Name)...)
		expected[batchv1.ControllerUidLabel] = string(job.UID)
		expected[batchv1.JobNameLabel] = job.Name
	}
	if sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector); err == nil && !sel.Matches(labels.Set(expected)) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec").Child("selector"), job.Spec.Selector, "`selector` not auto-generated"))
	}
	return allErrs
}

func validateJobSpecWithSelector(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateJobSpec(spec, fldPath)
	if spec.Selector == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("selector"), ""))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector,
			metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("template", "metadata", "labels"), spec.Template.Labels,
			"`selector` does not match template `labels`"))
	}
	return allErrs
}

// ValidateJobTemplateSpec checks a Job template embedded in another object
// (the JobSet's replicatedJobs): the spec rules without the selector rules.
func ValidateJobTemplateSpec(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	return validateJobSpec(spec, fldPath)
}

func validateJobSpec(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, f := range []struct {
		name string
		v    *int32
	}{
		{"parallelism", spec.Parallelism}, {"completions", spec.Completions},
	} {
		if f.v != nil {
			allErrs = append(allErrs, validateNonnegative(int64(*f.v), fldPath.Child(f.name))...)
		}
	}
	if spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, validateNonnegative(*spec.ActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}
	for _, f := range []struct {
		name string
		v    *int32
	}{
		{"backoffLimit", spec.BackoffLimit}, {"ttlSecondsAfterFinished", spec.TTLSecondsAfterFinished},
		{"backoffLimitPerIndex", spec.BackoffLimitPerIndex},
	} {
		if f.v != nil {
			allErrs = append(allErrs, validateNonnegative(int64(*f.v), fldPath.Child(f.name))...)
		}
	}
	if spec.MaxFailedIndexes != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*spec.MaxFailedIndexes), fldPath.Child("maxFailedIndexes"))...)
		if spec.BackoffLimitPerIndex == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
	}
	if spec.ManagedBy != nil {
		allErrs = append(allErrs, validation.IsDomainPrefixedPath(fldPath.Child("managedBy"), *spec.ManagedBy)...)
		if len(*spec.ManagedBy) > maxManagedByLength {
			allErrs = append(allErrs, field.TooLongMaxLength(fldPath.Child("managedBy"), *spec.ManagedBy, maxManagedByLength))
		}
	}
	allErrs = append(allErrs, validateCompletionMode(spec, fldPath)...)
	if spec.PodFailurePolicy != nil {
		allErrs = append(allErrs, validatePodFailurePolicy(spec, fldPath.Child("podFailurePolicy"))...)
	}
	if spec.SuccessPolicy != nil {
		if !isIndexed(spec) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("successPolicy"), *spec.SuccessPolicy, "requires indexed completion mode"))
		} else {
			allErrs = append(allErrs, validateSuccessPolicy(spec, fldPath.Child("successPolicy"))...)
		}
	}
	allErrs = append(allErrs, validatePodReplacementPolicy(spec, fldPath.Child("podReplacementPolicy"))...)
	allErrs = append(allErrs, ValidatePodTemplateSpec(&spec.Template, fldPath.Child("template"))...)
	allErrs = append(allErrs, validateJobRestartPolicy(spec, fldPath.Child("template", "spec", "restartPolicy"))...)
	return allErrs
}

func validateJobRestartPolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	rp := spec.Template.Spec.RestartPolicy
	switch {
	case rp == corev1.RestartPolicyAlways || rp == "":
		return field.ErrorList{field.Required(fldPath, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever))}
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		return field.ErrorList{field.NotSupported(fldPath, rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})}
	case spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		return field.ErrorList{field.Invalid(fldPath, rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever))}
	}
	return nil
}

func validateCompletionMode(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.CompletionMode != nil {
		mode := *spec.CompletionMode
		if mode != batchv1.NonIndexedCompletion && mode != batchv1.IndexedCompletion {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("completionMode"), spec.CompletionMode,
				[]batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
		if mode == batchv1.IndexedCompletion {
			allErrs = append(allErrs, validateIndexedLimits(spec, fldPath)...)
		}
	}
	if ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.NonIndexedCompletion {
		if spec.BackoffLimitPerIndex != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}
	return allErrs
}

func validateIndexedLimits(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Completions == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
	}
	if spec.Parallelism != nil && *spec.Parallelism > maxParallelismForIndexedJob {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("parallelism"), *spec.Parallelism,
			fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
	}
	if spec.Completions != nil && spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > *spec.Completions {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "must be less than or equal to completions"))
	}
	if spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > maxFailedIndexesForIndexedJob {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes,
			fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
	}
	if spec.Completions != nil && *spec.Completions > completionsSoftLimit && spec.BackoffLimitPerIndex != nil {
		if spec.MaxFailedIndexes == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("maxFailedIndexes"),
				fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
		}
		if spec.Parallelism != nil && *spec.Parallelism > parallelismLimitForHighCompletions {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("parallelism"), *spec.Parallelism,
				fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", parallelismLimitForHighCompletions, completionsSoftLimit)))
		}
		if spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > maxFailedIndexesLimitForHighCompletions {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes,
				fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", maxFailedIndexesLimitForHighCompletions, completionsSoftLimit)))
		}
	}
	return allErrs
}

func validatePodReplacementPolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	if spec.PodReplacementPolicy == nil {
		return nil
	}
	p := *spec.PodReplacementPolicy
	if spec.PodFailurePolicy != nil {
		if p != batchv1.Failed {
			return field.ErrorList{field.NotSupported(fldPath, p, []batchv1.PodReplacementPolicy{batchv1.Failed})}
		}
		return nil
	}
	if p != batchv1.Failed && p != batchv1.TerminatingOrFailed {
		return field.ErrorList{field.NotSupported(fldPath, p, []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed})}
	}
	return nil
}
