package validation

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

const (
	dns1035TooLong         = "must be no more than 63 characters"
	groupNameTooLongMsg    = ".spec.replicatedJob[].groupName is too long, must be less than 63 characters"
	jobNameTooLongMsg      = "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
	podNameTooLongMsg      = "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
	subdomainTooLongMsg    = ".spec.network.subdomain is too long, must be less than 63 characters"
	maxRJobReplicasRestart = 1024
)

// RecreateJobAction is seed 004's name for the per-Job restart that upstream
// v0.12 calls RestartJob. batchlet accepts it as an alias (same behaviour);
// the supported-values message still lists upstream's names.
const RecreateJobAction jobsetv1alpha2.FailurePolicyAction = "RecreateJob"

var (
	ruleNameRegexp     = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)
	validFailureReason = []string{
		batchv1.JobReasonBackoffLimitExceeded, batchv1.JobReasonDeadlineExceeded, batchv1.JobReasonFailedIndexes,
		batchv1.JobReasonMaxFailedIndexesExceeded, batchv1.JobReasonPodFailurePolicy,
	}
	failurePolicyActions = []jobsetv1alpha2.FailurePolicyAction{
		jobsetv1alpha2.FailJobSet, jobsetv1alpha2.RestartJobSet, jobsetv1alpha2.RestartJobSetAndIgnoreMaxRestarts,
		jobsetv1alpha2.RestartJob, jobsetv1alpha2.RestartJobAndIgnoreMaxRestarts,
	}
)

// ValidateJobSet checks a new JobSet as the API server would: first the
// CRD schema and CEL rules (ValidateJobSetSchema); if those pass, the
// validating webhook's rules (ValidateJobSetWebhook), whose plain errors are
// field.InternalError values ("<nil>: Internal error: ..."), as upstream's
// webhook returns them.
func ValidateJobSet(js *jobsetv1alpha2.JobSet) field.ErrorList {
	if errs := ValidateJobSetSchema(js); len(errs) > 0 {
		return errs
	}
	return ValidateJobSetWebhook(js)
}

// ValidateJobSetSchema checks what the CRD's OpenAPI schema and CEL rules
// reject: metadata, enum values, minimums, and StartupPolicy InOrder with
// dependsOn.
func ValidateJobSetSchema(js *jobsetv1alpha2.JobSet) field.ErrorList {
	allErrs := ValidateObjectMeta(&js.ObjectMeta, true, true, field.NewPath("metadata"))
	spec := &js.Spec
	specPath := field.NewPath("spec")
	for i, rj := range spec.ReplicatedJobs {
		if rj.Replicas < 0 {
			allErrs = append(allErrs, field.Invalid(specPath.Child("replicatedJobs").Index(i).Child("replicas"), rj.Replicas, "should be greater than or equal to 0"))
		}
	}
	if spec.FailurePolicy != nil {
		for i, r := range spec.FailurePolicy.Rules {
			if !slices.Contains(failurePolicyActions, r.Action) && r.Action != RecreateJobAction {
				allErrs = append(allErrs, field.NotSupported(specPath.Child("failurePolicy", "rules").Index(i).Child("action"), r.Action, failurePolicyActions))
			}
		}
		switch spec.FailurePolicy.RestartStrategy {
		case "", jobsetv1alpha2.Recreate, jobsetv1alpha2.BlockingRecreate, jobsetv1alpha2.InPlaceRestart:
		default:
			allErrs = append(allErrs, field.NotSupported(specPath.Child("failurePolicy", "restartStrategy"), spec.FailurePolicy.RestartStrategy,
				[]jobsetv1alpha2.JobSetRestartStrategy{jobsetv1alpha2.Recreate, jobsetv1alpha2.BlockingRecreate, jobsetv1alpha2.InPlaceRestart}))
		}
	}
	if sp := spec.SuccessPolicy; sp != nil && sp.Operator != jobsetv1alpha2.OperatorAll && sp.Operator != jobsetv1alpha2.OperatorAny {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("successPolicy", "operator"), sp.Operator,
			[]jobsetv1alpha2.Operator{jobsetv1alpha2.OperatorAll, jobsetv1alpha2.OperatorAny}))
	}
	if sp := spec.StartupPolicy; sp != nil {
		switch sp.StartupPolicyOrder {
		case jobsetv1alpha2.AnyOrder, jobsetv1alpha2.InOrder:
		default:
			allErrs = append(allErrs, field.NotSupported(specPath.Child("startupPolicy", "startupPolicyOrder"), sp.StartupPolicyOrder,
				[]jobsetv1alpha2.StartupPolicyOptions{jobsetv1alpha2.AnyOrder, jobsetv1alpha2.InOrder}))
		}
		if sp.StartupPolicyOrder == jobsetv1alpha2.InOrder && anyDependsOn(spec) {
			allErrs = append(allErrs, field.Invalid(specPath, field.OmitValueType{}, "StartupPolicy and DependsOn APIs are mutually exclusive"))
		}
	}
	if spec.TTLSecondsAfterFinished != nil && *spec.TTLSecondsAfterFinished < 0 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("ttlSecondsAfterFinished"), *spec.TTLSecondsAfterFinished, "should be greater than or equal to 0"))
	}
	return allErrs
}

func anyDependsOn(spec *jobsetv1alpha2.JobSetSpec) bool {
	for _, rj := range spec.ReplicatedJobs {
		if len(rj.DependsOn) > 0 {
			return true
		}
	}
	return false
}

// ValidateJobSetWebhook reproduces the JobSet validating webhook's
// ValidateCreate (feature gates: RestartJob on, InPlaceRestart off,
// workload-aware scheduling off).
func ValidateJobSetWebhook(js *jobsetv1alpha2.JobSet) field.ErrorList {
	var errs []error
	spec := &js.Spec
	name := jobSetNameForValidation(js)
	if spec.FailurePolicy != nil && spec.FailurePolicy.RestartStrategy == jobsetv1alpha2.InPlaceRestart {
		errs = append(errs, errors.New("InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is disabled"))
	}
	if len(spec.ReplicatedJobs) > 0 && spec.ReplicatedJobs[0].DependsOn != nil {
		errs = append(errs, errors.New("DependsOn can't be set for the first ReplicatedJob"))
	}
	if spec.Network != nil && spec.Network.Subdomain != "" {
		errs = append(errs, validateSubdomain(spec.Network.Subdomain)...)
	}
	if spec.ManagedBy != nil {
		p := field.NewPath("spec", "managedBy")
		for _, e := range validation.IsDomainPrefixedPath(p, *spec.ManagedBy) {
			errs = append(errs, e)
		}
		if len(*spec.ManagedBy) > maxManagedByLength {
			errs = append(errs, field.TooLongMaxLength(p, *spec.ManagedBy, maxManagedByLength))
		}
	}
	rjNames := sets.New[string]()
	for i := range spec.ReplicatedJobs {
		rjNames.Insert(spec.ReplicatedJobs[i].Name)
		errs = append(errs, validateReplicatedJob(name, &spec.ReplicatedJobs[i], i, rjNames)...)
	}
	if spec.SuccessPolicy != nil {
		for _, n := range spec.SuccessPolicy.TargetReplicatedJobs {
			if !rjNames.Has(n) {
				errs = append(errs, fmt.Errorf("invalid replicatedJob name '%s' does not appear in .spec.ReplicatedJobs", n))
			}
		}
	}
	if spec.FailurePolicy != nil {
		errs = append(errs, validateJobSetFailurePolicy(js, rjNames)...)
	}
	if spec.Coordinator != nil {
		if err := validateCoordinator(js); err != nil {
			errs = append(errs, err)
		}
		if err := validateCoordinatorLabel(js, name); err != nil {
			errs = append(errs, err)
		}
	}
	return toFieldErrors(errs)
}

func toFieldErrors(errs []error) field.ErrorList {
	var out field.ErrorList
	for _, err := range errs {
		var fe *field.Error
		if errors.As(err, &fe) {
			out = append(out, fe)
		} else {
			out = append(out, field.InternalError(nil, err))
		}
	}
	return out
}

// jobSetNameForValidation is the name used for length checks: the name, or
// generateName plus a 5-character suffix.
func jobSetNameForValidation(js *jobsetv1alpha2.JobSet) string {
	if js.Name != "" || js.GenerateName == "" {
		return js.Name
	}
	base := js.GenerateName
	if len(base) > 58 {
		base = base[:58]
	}
	return base + "abcde"
}

func validateSubdomain(sub string) []error {
	p := field.NewPath("spec", "network", "subdomain")
	var errs []error
	for _, msg := range validation.IsDNS1123Subdomain(sub) {
		errs = append(errs, field.Invalid(p, sub, msg))
	}
	for _, msg := range validation.IsDNS1035Label(sub) {
		if strings.Contains(msg, dns1035TooLong) {
			msg = subdomainTooLongMsg
		}
		errs = append(errs, field.Invalid(p, sub, msg))
	}
	return errs
}

func validateReplicatedJob(jsName string, rj *jobsetv1alpha2.ReplicatedJob, i int, seen sets.Set[string]) []error {
	var errs []error
	p := field.NewPath("spec", "replicatedJobs").Index(i)
	parallelism := ptr.Deref(rj.Template.Spec.Parallelism, 1)
	if int64(parallelism)*int64(rj.Replicas) > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("the product of replicas and parallelism must not exceed %d for replicatedJob '%s'", math.MaxInt32, rj.Name))
	}
	for _, msg := range validation.IsDNS1035Label(rj.GroupName) {
		if strings.Contains(msg, dns1035TooLong) {
			msg = groupNameTooLongMsg
		}
		errs = append(errs, field.Invalid(p.Child("groupName"), rj.GroupName, msg))
	}
	longestJob := fmt.Sprintf("%s-%s-%d", jsName, rj.Name, rj.Replicas-1)
	for _, msg := range validation.IsDNS1035Label(longestJob) {
		if strings.Contains(msg, dns1035TooLong) {
			msg = jobNameTooLongMsg
		}
		errs = append(errs, field.Invalid(p.Child("name"), longestJob, msg))
	}
	if ptr.Deref(rj.Template.Spec.CompletionMode, "") == batchv1.IndexedCompletion && rj.Template.Spec.Completions != nil {
		longestPod := fmt.Sprintf("%s-%s-%s-%s-abcde", jsName, rj.Name, strconv.Itoa(int(rj.Replicas-1)), strconv.Itoa(int(*rj.Template.Spec.Completions-1)))
		for _, msg := range validation.IsDNS1035Label(longestPod) {
			if strings.Contains(msg, dns1035TooLong) {
				msg = podNameTooLongMsg
			}
			errs = append(errs, field.Invalid(p.Child("name"), longestJob, msg))
		}
	}
	for _, d := range rj.DependsOn {
		if !seen.Has(d.Name) {
			errs = append(errs, fmt.Errorf("replicatedJob: %s cannot depend on replicatedJob: %s", rj.Name, d.Name))
		}
	}
	return errs
}

func validateJobSetFailurePolicy(js *jobsetv1alpha2.JobSet, rjNames sets.Set[string]) []error {
	var errs []error
	fp := js.Spec.FailurePolicy
	for _, r := range fp.Rules {
		if r.Action == jobsetv1alpha2.RestartJob || r.Action == jobsetv1alpha2.RestartJobAndIgnoreMaxRestarts || r.Action == RecreateJobAction {
			if slices.ContainsFunc(js.Spec.ReplicatedJobs, func(rj jobsetv1alpha2.ReplicatedJob) bool { return rj.Replicas > maxRJobReplicasRestart }) {
				errs = append(errs, fmt.Errorf("JobSet cannot have a failure policy rule with RestartJob or RestartJobAndIgnoreMaxRestarts action and a replicated job with replicas > %d", maxRJobReplicasRestart))
			}
			break
		}
	}
	byName := map[string][]int{}
	var order []string
	for i, r := range fp.Rules {
		if n := len(r.Name); n < 1 || n > 128 {
			errs = append(errs, fmt.Errorf("invalid failure policy rule name of length %v, the rule name must be at least %v characters long and at most %v characters long", n, 1, 128))
		}
		if _, ok := byName[r.Name]; !ok {
			order = append(order, r.Name)
		}
		byName[r.Name] = append(byName[r.Name], i)
		if !ruleNameRegexp.MatchString(r.Name) {
			errs = append(errs, fmt.Errorf("invalid failure policy rule name '%v', a failure policy rule name must start with an alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'", r.Name))
		}
		for _, t := range r.TargetReplicatedJobs {
			if !rjNames.Has(t) {
				errs = append(errs, fmt.Errorf("invalid replicatedJob name '%s' in failure policy does not appear in .spec.ReplicatedJobs", t))
			}
		}
		for _, reason := range r.OnJobFailureReasons {
			if !slices.Contains(validFailureReason, reason) {
				errs = append(errs, fmt.Errorf("invalid job failure reason '%s' in failure policy is not a recognized job failure reason", reason))
			}
		}
		for _, pat := range r.OnJobFailureMessagePatterns {
			if _, err := regexp.Compile(pat); err != nil {
				errs = append(errs, fmt.Errorf("invalid job failure message pattern '%s' in failure policy: %v", pat, err))
			}
		}
	}
	for _, n := range order {
		if idx := byName[n]; len(idx) > 1 {
			errs = append(errs, fmt.Errorf("rule names are not unique, rules with indices %v all have the same name '%v'", idx, n))
		}
	}
	return errs
}

func validateCoordinator(js *jobsetv1alpha2.JobSet) error {
	c := js.Spec.Coordinator
	var rj *jobsetv1alpha2.ReplicatedJob
	for i := range js.Spec.ReplicatedJobs {
		if js.Spec.ReplicatedJobs[i].Name == c.ReplicatedJob {
			rj = &js.Spec.ReplicatedJobs[i]
		}
	}
	if rj == nil {
		return fmt.Errorf("coordinator replicatedJob %s does not exist", c.ReplicatedJob)
	}
	if c.JobIndex < 0 || c.JobIndex >= int(rj.Replicas) {
		return fmt.Errorf("coordinator job index %d is invalid for replicatedJob %s", c.JobIndex, rj.Name)
	}
	spec := rj.Template.Spec
	if spec.CompletionMode == nil || spec.Completions == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		return errors.New("job for coordinator pod must be indexed completion mode, and completions number must be set")
	}
	if c.PodIndex < 0 || c.PodIndex >= int(*spec.Completions) {
		return fmt.Errorf("coordinator pod index %d is invalid for replicatedJob %s job index %d", c.PodIndex, c.ReplicatedJob, c.JobIndex)
	}
	return nil
}

func validateCoordinatorLabel(js *jobsetv1alpha2.JobSet, name string) error {
	c := js.Spec.Coordinator
	sub := name
	if js.Spec.Network != nil && js.Spec.Network.Subdomain != "" {
		sub = js.Spec.Network.Subdomain
	}
	value := fmt.Sprintf("%s-%s-%d-%d.%s", name, c.ReplicatedJob, c.JobIndex, c.PodIndex, sub)
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return fmt.Errorf("spec will lead to invalid label value %q for coordinator label %q (long JobSet / ReplicatedJob / SubDomain name?): %s",
			value, jobsetv1alpha2.CoordinatorKey, strings.Join(errs, ", "))
	}
	return nil
}

// ValidateJobSetUpdate reproduces the webhook's ValidateUpdate plus the CRD's
// "Value is immutable" CEL rules: replicatedJobs are immutable except the pod
// template's labels, annotations, nodeSelector, tolerations and
// schedulingGates while the old or new JobSet is suspended; managedBy,
// network, successPolicy, failurePolicy and startupPolicy are immutable.
func ValidateJobSetUpdate(newJS, oldJS *jobsetv1alpha2.JobSet) field.ErrorList {
	allErrs := ValidateObjectMetaUpdate(&newJS.ObjectMeta, &oldJS.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	for _, f := range []struct {
		name     string
		new, old interface{}
	}{
		{"network", newJS.Spec.Network, oldJS.Spec.Network},
		{"successPolicy", newJS.Spec.SuccessPolicy, oldJS.Spec.SuccessPolicy},
		{"failurePolicy", newJS.Spec.FailurePolicy, oldJS.Spec.FailurePolicy},
		{"startupPolicy", newJS.Spec.StartupPolicy, oldJS.Spec.StartupPolicy},
		{"volumeClaimPolicies", newJS.Spec.VolumeClaimPolicies, oldJS.Spec.VolumeClaimPolicies},
	} {
		if errs := validateImmutable(f.new, f.old, specPath.Child(f.name)); len(errs) > 0 {
			allErrs = append(allErrs, field.Invalid(specPath.Child(f.name), f.new, "Value is immutable"))
		}
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	munged := newJS.Spec.DeepCopy()
	if ptr.Deref(oldJS.Spec.Suspend, false) || ptr.Deref(newJS.Spec.Suspend, false) {
		old := map[string]*jobsetv1alpha2.ReplicatedJob{}
		for i := range oldJS.Spec.ReplicatedJobs {
			old[oldJS.Spec.ReplicatedJobs[i].Name] = &oldJS.Spec.ReplicatedJobs[i]
		}
		for i := range munged.ReplicatedJobs {
			o, ok := old[munged.ReplicatedJobs[i].Name]
			if !ok {
				continue
			}
			t := &munged.ReplicatedJobs[i].Template.Spec.Template
			ot := &o.Template.Spec.Template
			t.Annotations, t.Labels = ot.Annotations, ot.Labels
			t.Spec.NodeSelector, t.Spec.Tolerations, t.Spec.SchedulingGates = ot.Spec.NodeSelector, ot.Spec.Tolerations, ot.Spec.SchedulingGates
		}
	}
	allErrs = append(allErrs, validateImmutable(munged.ReplicatedJobs, oldJS.Spec.ReplicatedJobs, specPath.Child("replicatedJobs"))...)
	allErrs = append(allErrs, validateImmutable(newJS.Spec.ManagedBy, oldJS.Spec.ManagedBy, specPath.Child("managedBy"))...)
	return allErrs
}

// JobSetIsTerminal reports whether the JobSet has Completed or Failed True.
func JobSetIsTerminal(js *jobsetv1alpha2.JobSet) bool {
	return meta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)) ||
		meta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetFailed))
}
