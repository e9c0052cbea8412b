package validation

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields is the list upstream prints when a pod update
// touches anything else.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// ValidatePod checks a new pod: metadata (DNS-1123 subdomain name,
// namespace required) and spec.
func ValidatePod(pod *corev1.Pod) field.ErrorList {
	allErrs := ValidateObjectMeta(&pod.ObjectMeta, true, true, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidatePodSpec(&pod.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidatePodUpdate checks an update of the main pod resource: only
// container images, activeDeadlineSeconds (set or decreased), added
// tolerations, removed scheduling gates and a negative grace period changed to
// 1 may change.
func ValidatePodUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	return ValidatePodUpdateSpecKnown(newPod, oldPod, apiequality.Semantic.DeepEqual(newPod.Spec, oldPod.Spec))
}

// ValidatePodUpdateSpecKnown is ValidatePodUpdate for a caller that has
// already compared the specs (semantic equality): the server does, to bump
// the generation, and need not walk the spec twice.
func ValidatePodUpdateSpecKnown(newPod, oldPod *corev1.Pod, specEqual bool) field.ErrorList {
	allErrs := ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateObjectMetaOfUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, true, true, field.NewPath("metadata"))...)
	allErrs = append(allErrs, ValidatePodSpec(&newPod.Spec, field.NewPath("spec"))...)
	specPath := field.NewPath("spec")
	errs, stop := validateContainerUpdates(newPod.Spec.Containers, oldPod.Spec.Containers, specPath.Child("containers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}
	errs, stop = validateContainerUpdates(newPod.Spec.InitContainers, oldPod.Spec.InitContainers, specPath.Child("initContainers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}
	errs, stop = validateActiveDeadlineUpdate(newPod.Spec.ActiveDeadlineSeconds, oldPod.Spec.ActiveDeadlineSeconds, specPath.Child("activeDeadlineSeconds"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}
	allErrs = append(allErrs, validateOnlyAddedTolerations(newPod.Spec.Tolerations, oldPod.Spec.Tolerations, specPath.Child("tolerations"))...)
	allErrs = append(allErrs, validateOnlyDeletedSchedulingGates(newPod.Spec.SchedulingGates, oldPod.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)
	if specEqual {
		return allErrs
	}
	munged := mungePodSpec(&newPod.Spec, &oldPod.Spec)
	if !apiequality.Semantic.DeepEqual(munged, &oldPod.Spec) {
		msg := fmt.Sprintf("pod updates may not change fields other than %s\n%s",
			strings.Join(updatablePodSpecFields, ","), specDiff(&oldPod.Spec, munged))
		allErrs = append(allErrs, field.Forbidden(specPath, msg))
	}
	return allErrs
}

// ValidatePodUpdateStoredSpec is ValidatePodUpdate for an update whose spec
// is the stored pod's own (the same memory: a metadata patch of the shared
// current pod), with the same answer for every spec this server stores.
// The update checks compare the spec with itself, so they fail only for
// what ValidatePodSpec already rejects (an empty image, an out-of-range
// activeDeadlineSeconds, invalid tolerations); and ValidatePodSpec of a
// stored spec finds nothing, because every write that stores a pod spec
// validated it (create, a spec update) except binding, which sets
// spec.nodeName unchecked: that field is checked here, in the place
// ValidatePodSpec reports it. A spec stored under other rules (an older
// version, a restored backup) is not checked again; kube-apiserver
// ratchets most rules for an unchanged spec too. The metadata checks run
// in full: they can fail.
func ValidatePodUpdateStoredSpec(newPod, oldPod *corev1.Pod) field.ErrorList {
	allErrs := ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateObjectMetaOfUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, true, true, field.NewPath("metadata"))...)
	return append(allErrs, validateNodeName(newPod.Spec.NodeName, field.NewPath("spec", "nodeName"))...)
}

// mungePodSpec returns the new spec with every mutable field reset to the
// old value, so that what remains different is forbidden.
func mungePodSpec(newSpec, oldSpec *corev1.PodSpec) *corev1.PodSpec {
	m := newSpec.DeepCopy()
	for i := range m.Containers {
		m.Containers[i].Image = oldSpec.Containers[i].Image
		m.Containers[i].Resources = oldSpec.Containers[i].Resources
	}
	for i := range m.InitContainers {
		m.InitContainers[i].Image = oldSpec.InitContainers[i].Image
		m.InitContainers[i].Resources = oldSpec.InitContainers[i].Resources
	}
	m.ActiveDeadlineSeconds = oldSpec.ActiveDeadlineSeconds
	m.SchedulingGates = oldSpec.SchedulingGates
	m.Tolerations = oldSpec.Tolerations
	if g := oldSpec.TerminationGracePeriodSeconds; g != nil && *g < 0 &&
		m.TerminationGracePeriodSeconds != nil && *m.TerminationGracePeriodSeconds == 1 {
		m.TerminationGracePeriodSeconds = g
	}
	if len(oldSpec.SchedulingGates) > 0 {
		// A gated pod may gain nodeSelector entries and node affinity.
		if addsOnly(m.NodeSelector, oldSpec.NodeSelector) {
			m.NodeSelector = oldSpec.NodeSelector
		}
		if oldSpec.Affinity == nil || oldSpec.Affinity.NodeAffinity == nil {
			if m.Affinity != nil && oldSpec.Affinity == nil && m.Affinity.PodAffinity == nil && m.Affinity.PodAntiAffinity == nil {
				m.Affinity = nil
			}
		}
	}
	// ephemeralContainers are changed through their own subresource.
	m.EphemeralContainers = oldSpec.EphemeralContainers
	return m
}

func addsOnly(newMap, oldMap map[string]string) bool {
	for k, v := range oldMap {
		if nv, ok := newMap[k]; !ok || nv != v {
			return false
		}
	}
	return true
}

func validateContainerUpdates(newCs, oldCs []corev1.Container, fldPath *field.Path) (field.ErrorList, bool) {
	if len(newCs) != len(oldCs) {
		return field.ErrorList{field.Forbidden(fldPath, "pod updates may not add or remove containers")}, true
	}
	var allErrs field.ErrorList
	for i, c := range newCs {
		if c.Image == "" {
			allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("image"), ""))
		}
	}
	return allErrs, false
}

func validateActiveDeadlineUpdate(newV, oldV *int64, fldPath *field.Path) (field.ErrorList, bool) {
	if newV == nil {
		if oldV != nil {
			return field.ErrorList{field.Invalid(fldPath, newV, "must not update from a positive integer to nil value")}, false
		}
		return nil, false
	}
	if *newV < 0 || *newV > math.MaxInt32 {
		return field.ErrorList{field.Invalid(fldPath, *newV, validation.InclusiveRangeError(0, math.MaxInt32))}, true
	}
	if oldV != nil && *oldV < *newV {
		return field.ErrorList{field.Invalid(fldPath, *newV, "must be less than or equal to previous value")}, true
	}
	return nil, false
}

func validateOnlyAddedTolerations(newTs, oldTs []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, old := range oldTs {
		found := false
		oldCopy := old
		oldCopy.TolerationSeconds = nil
		for _, nt := range newTs {
			ntCopy := nt
			ntCopy.TolerationSeconds = nil
			if apiequality.Semantic.DeepEqual(ntCopy, oldCopy) {
				found = true
				break
			}
		}
		if !found {
			allErrs = append(allErrs, field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds"))
			return allErrs
		}
	}
	return append(allErrs, validateTolerations(newTs, fldPath)...)
}

func validateOnlyDeletedSchedulingGates(newGates, oldGates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	if len(newGates) == 0 {
		return nil
	}
	old := map[string]bool{}
	for _, g := range oldGates {
		old[g.Name] = true
	}
	for _, g := range newGates {
		if !old[g.Name] {
			return field.ErrorList{field.Forbidden(fldPath, "only deletion is allowed, but found new scheduling gate '"+g.Name+"'")}
		}
	}
	return nil
}

// ValidatePodStatusUpdate checks an update of pods/status: metadata rules,
// valid pod IPs and host IPs, and that a pod that never restarts does not
// move a terminated container back to a non-terminated state.
func ValidatePodStatusUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	allErrs := ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	if newPod.Status.NominatedNodeName != "" {
		for _, msg := range dnsSubdomainNameMsgs(newPod.Status.NominatedNodeName) {
			allErrs = append(allErrs, field.Invalid(statusPath.Child("nominatedNodeName"), newPod.Status.NominatedNodeName, msg))
		}
	}
	policy := oldPod.Spec.RestartPolicy
	allErrs = append(allErrs, validateNoRestart(newPod.Status.ContainerStatuses, oldPod.Status.ContainerStatuses, policy, statusPath.Child("containerStatuses"))...)
	allErrs = append(allErrs, validateNoRestart(newPod.Status.InitContainerStatuses, oldPod.Status.InitContainerStatuses, policy, statusPath.Child("initContainerStatuses"))...)
	for i, ip := range newPod.Status.PodIPs {
		allErrs = append(allErrs, validation.IsValidIP(statusPath.Child("podIPs").Index(i).Child("ip"), ip.IP)...)
	}
	for i, ip := range newPod.Status.HostIPs {
		allErrs = append(allErrs, validation.IsValidIP(statusPath.Child("hostIPs").Index(i).Child("ip"), ip.IP)...)
	}
	return allErrs
}

// validateNoRestart rejects moving a terminated container back to a
// non-terminated state when the restart policy would never restart it:
// Never, or OnFailure after a successful exit.
func validateNoRestart(newSs, oldSs []corev1.ContainerStatus, policy corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	if policy == corev1.RestartPolicyAlways {
		return nil
	}
	var allErrs field.ErrorList
	for i, ns := range newSs {
		for _, os := range oldSs {
			if os.Name != ns.Name || os.State.Terminated == nil || ns.State.Terminated != nil {
				continue
			}
			if policy == corev1.RestartPolicyNever || os.State.Terminated.ExitCode == 0 {
				allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return allErrs
}

// specDiff renders a line diff of the two specs' indented JSON, in the
// spirit of upstream's cmp.Diff output.
func specDiff(oldSpec, newSpec *corev1.PodSpec) string {
	a, _ := json.MarshalIndent(oldSpec, "  ", "  ")
	b, _ := json.MarshalIndent(newSpec, "  ", "  ")
	return lineDiff(strings.Split(string(a), "\n"), strings.Split(string(b), "\n"))
}

func lineDiff(a, b []string) string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			sb.WriteString("+ " + b[j] + "\n")
			j++
		default:
			sb.WriteString("- " + a[i] + "\n")
			i++
		}
	}
	return sb.String()
}
