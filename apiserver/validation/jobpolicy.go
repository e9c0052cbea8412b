package validation

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	maxPodFailurePolicyRules                   = 20
	maxPodFailurePolicyOnExitCodesValues       = 255
	maxPodFailurePolicyOnPodConditionsPatterns = 20
	maxSucceededIndexesLength                  = 64 * 1024
	maxSuccessPolicyRules                      = 20
)

// Sorted, as upstream lists them with sets.List.
var (
	podFailurePolicyActions = []string{"Count", "FailIndex", "FailJob", "Ignore"}
	onExitCodesOperators    = []string{"In", "NotIn"}
	conditionStatuses       = []string{"False", "True", "Unknown"}
)

func validatePodFailurePolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rules := spec.PodFailurePolicy.Rules
	rulesPath := fldPath.Child("rules")
	if len(rules) > maxPodFailurePolicyRules {
		allErrs = append(allErrs, field.TooMany(rulesPath, len(rules), maxPodFailurePolicyRules))
	}
	names := sets.New[string]()
	for _, c := range spec.Template.Spec.Containers {
		names.Insert(c.Name)
	}
	for _, c := range spec.Template.Spec.InitContainers {
		names.Insert(c.Name)
	}
	for i := range rules {
		allErrs = append(allErrs, validatePodFailurePolicyRule(spec, &rules[i], rulesPath.Index(i), names)...)
	}
	return allErrs
}

func validatePodFailurePolicyRule(spec *batchv1.JobSpec, rule *batchv1.PodFailurePolicyRule, rulePath *field.Path, names sets.Set[string]) field.ErrorList {
	var allErrs field.ErrorList
	actionPath := rulePath.Child("action")
	switch {
	case rule.Action == "":
		allErrs = append(allErrs, field.Required(actionPath, fmt.Sprintf("valid values: %q", podFailurePolicyActions)))
	case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
		if spec.BackoffLimitPerIndex == nil {
			allErrs = append(allErrs, field.Invalid(actionPath, rule.Action, "requires the backoffLimitPerIndex to be set"))
		}
	case !sets.New(podFailurePolicyActions...).Has(string(rule.Action)):
		allErrs = append(allErrs, field.NotSupported(actionPath, rule.Action, podFailurePolicyActions))
	}
	if rule.OnExitCodes != nil {
		allErrs = append(allErrs, validateOnExitCodes(rule.OnExitCodes, rulePath.Child("onExitCodes"), names)...)
	}
	if len(rule.OnPodConditions) > 0 {
		allErrs = append(allErrs, validateOnPodConditions(rule.OnPodConditions, rulePath.Child("onPodConditions"))...)
	}
	if rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0 {
		allErrs = append(allErrs, field.Invalid(rulePath, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	}
	if rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0 {
		allErrs = append(allErrs, field.Invalid(rulePath, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return allErrs
}

func validateOnPodConditions(patterns []batchv1.PodFailurePolicyOnPodConditionsPattern, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(patterns) > maxPodFailurePolicyOnPodConditionsPatterns {
		allErrs = append(allErrs, field.TooMany(fldPath, len(patterns), maxPodFailurePolicyOnPodConditionsPatterns))
	}
	for j, p := range patterns {
		pPath := fldPath.Index(j)
		allErrs = append(allErrs, metav1validation.ValidateLabelName(string(p.Type), pPath.Child("type"))...)
		statusPath := pPath.Child("status")
		switch p.Status {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		case "":
			allErrs = append(allErrs, field.Required(statusPath, fmt.Sprintf("valid values: %q", conditionStatuses)))
		default:
			allErrs = append(allErrs, field.NotSupported(statusPath, p.Status, conditionStatuses))
		}
	}
	return allErrs
}

func validateOnExitCodes(req *batchv1.PodFailurePolicyOnExitCodesRequirement, fldPath *field.Path, names sets.Set[string]) field.ErrorList {
	var allErrs field.ErrorList
	opPath := fldPath.Child("operator")
	switch req.Operator {
	case batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn:
	case "":
		allErrs = append(allErrs, field.Required(opPath, fmt.Sprintf("valid values: %q", onExitCodesOperators)))
	default:
		allErrs = append(allErrs, field.NotSupported(opPath, req.Operator, onExitCodesOperators))
	}
	if req.ContainerName != nil && !names.Has(*req.ContainerName) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("containerName"), *req.ContainerName,
			"must be one of the container or initContainer names in the pod template"))
	}
	valuesPath := fldPath.Child("values")
	if len(req.Values) == 0 {
		allErrs = append(allErrs, field.Invalid(valuesPath, req.Values, "at least one value is required"))
	} else if len(req.Values) > maxPodFailurePolicyOnExitCodesValues {
		allErrs = append(allErrs, field.TooMany(valuesPath, len(req.Values), maxPodFailurePolicyOnExitCodesValues))
	}
	ordered := true
	seen := sets.New[int32]()
	for j, v := range req.Values {
		vPath := valuesPath.Index(j)
		if req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			allErrs = append(allErrs, field.Invalid(vPath, v, "must not be 0 for the In operator"))
		}
		if seen.Has(v) {
			allErrs = append(allErrs, field.Duplicate(vPath, v))
		}
		seen.Insert(v)
		if j > 0 && req.Values[j-1] > v {
			ordered = false
		}
	}
	if !ordered {
		allErrs = append(allErrs, field.Invalid(valuesPath, req.Values, "must be ordered"))
	}
	return allErrs
}

func validateSuccessPolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rules := spec.SuccessPolicy.Rules
	rulesPath := fldPath.Child("rules")
	if len(rules) == 0 {
		allErrs = append(allErrs, field.Required(rulesPath, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRules {
		allErrs = append(allErrs, field.TooMany(rulesPath, len(rules), maxSuccessPolicyRules))
	}
	for i := range rules {
		allErrs = append(allErrs, validateSuccessPolicyRule(spec, &rules[i], rulesPath.Index(i))...)
	}
	return allErrs
}

func validateSuccessPolicyRule(spec *batchv1.JobSpec, rule *batchv1.SuccessPolicyRule, rulePath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
		allErrs = append(allErrs, field.Required(rulePath, "at least one of succeededCount or succeededIndexes must be specified"))
	}
	completions := int32(0)
	if spec.Completions != nil {
		completions = *spec.Completions
	}
	var total int32
	if rule.SucceededIndexes != nil {
		p := rulePath.Child("succeededIndexes")
		if len(*rule.SucceededIndexes) > maxSucceededIndexesLength {
			allErrs = append(allErrs, field.TooLong(p, *rule.SucceededIndexes, maxSucceededIndexesLength))
		}
		var err error
		if total, err = ValidateIndexesFormat(*rule.SucceededIndexes, completions); err != nil {
			allErrs = append(allErrs, field.Invalid(p, *rule.SucceededIndexes, fmt.Sprintf("error parsing succeededIndexes: %s", err.Error())))
		}
	}
	if rule.SucceededCount != nil {
		p := rulePath.Child("succeededCount")
		allErrs = append(allErrs, validateNonnegative(int64(*rule.SucceededCount), p)...)
		if *rule.SucceededCount > completions {
			allErrs = append(allErrs, field.Invalid(p, *rule.SucceededCount,
				fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
		}
		if rule.SucceededIndexes != nil && *rule.SucceededCount > total {
			allErrs = append(allErrs, field.Invalid(p, *rule.SucceededCount,
				fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
		}
	}
	return allErrs
}

// ValidateIndexesFormat parses an index interval list strictly ("1,3-5,7")
// against completions and returns the number of indexes it names.
func ValidateIndexesFormat(s string, completions int32) (int32, error) {
	if s == "" {
		return 0, nil
	}
	var last *int32
	var total int32
	for _, interval := range strings.Split(s, ",") {
		x, y, err := parseIndexInterval(interval, completions)
		if err != nil {
			return 0, err
		}
		if last != nil && *last >= x {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", *last, x)
		}
		total += y - x + 1
		last = &y
	}
	return total, nil
}

func parseIndexInterval(s string, completions int32) (int32, int32, error) {
	parts := strings.Split(s, "-")
	if len(parts) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", s)
	}
	x, err := parseIndex(parts[0], completions)
	if err != nil {
		return 0, 0, err
	}
	if len(parts) == 1 {
		return x, x, nil
	}
	y, err := parseIndex(parts[1], completions)
	if err != nil {
		return 0, 0, err
	}
	if x >= y {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", x, y)
	}
	return x, y, nil
}

func parseIndex(s string, completions int32) (int32, error) {
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("cannot convert string to integer for index: %q", s)
	}
	if v >= int(completions) {
		return 0, fmt.Errorf("too large index: %q", s)
	}
	return int32(v), nil
}

// failedOverlapsCompleted reports the first index present in both lists.
func failedOverlapsCompleted(completed, failed string, completions int32) error {
	if completed == "" || failed == "" {
		return nil
	}
	cs, fs := strings.Split(completed, ","), strings.Split(failed, ",")
	ci, fi := 0, 0
	cx, cy, cErr := parseIndexInterval(cs[0], completions)
	fx, fy, fErr := parseIndexInterval(fs[0], completions)
	for ci < len(cs) && fi < len(fs) {
		switch {
		case cErr != nil:
			ci++
			if ci < len(cs) {
				cx, cy, cErr = parseIndexInterval(cs[ci], completions)
			}
		case fErr != nil:
			fi++
			if fi < len(fs) {
				fx, fy, fErr = parseIndexInterval(fs[fi], completions)
			}
		case cx <= fy && fx <= cy:
			return fmt.Errorf("failedIndexes and completedIndexes overlap at index: %d", max(cx, fx))
		case cx <= fx:
			ci++
			if ci < len(cs) {
				cx, cy, cErr = parseIndexInterval(cs[ci], completions)
			}
		default:
			fi++
			if fi < len(fs) {
				fx, fy, fErr = parseIndexInterval(fs[fi], completions)
			}
		}
	}
	return nil
}
