package validation

import (
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The object-meta checks run on every write. apimachinery's build their
// field paths, box values and match regexps before knowing whether there
// is an error; almost every write has none. The functions here first ask
// hand-written predicates, exact for acceptance, whether apimachinery's
// checks would find nothing; only when one says "maybe not" do they run
// apimachinery's, so every error (message, path, order) is apimachinery's
// own.

// ValidateObjectMetaAccessor is apimachinery's ValidateObjectMetaAccessor
// with the name rule nameFn (DNS-1123 subdomain when nameIsDNSSubdomain,
// label otherwise).
func ValidateObjectMetaAccessor(meta metav1.Object, namespaced, nameIsDNSSubdomain bool, fldPath *field.Path) field.ErrorList {
	if metaClean(meta, namespaced, nameIsDNSSubdomain) {
		return nil
	}
	nameFn := apimachineryvalidation.NameIsDNSLabel
	if nameIsDNSSubdomain {
		nameFn = apimachineryvalidation.NameIsDNSSubdomain
	}
	return apimachineryvalidation.ValidateObjectMetaAccessor(meta, namespaced, nameFn, fldPath)
}

// ObjectMetaClean says that apimachinery's ValidateObjectMetaAccessor
// (name rule as ValidateObjectMetaAccessor's nameIsDNSSubdomain) finds no
// error in meta, for callers that then skip a validation running it.
func ObjectMetaClean(meta metav1.Object, namespaced, nameIsDNSSubdomain bool) bool {
	return metaClean(meta, namespaced, nameIsDNSSubdomain)
}

// ValidateObjectMetaAccessorUpdate is apimachinery's
// ValidateObjectMetaAccessorUpdate.
func ValidateObjectMetaAccessorUpdate(newMeta, oldMeta metav1.Object, fldPath *field.Path) field.ErrorList {
	if metaUpdateClean(newMeta, oldMeta) {
		return nil
	}
	return apimachineryvalidation.ValidateObjectMetaAccessorUpdate(newMeta, oldMeta, fldPath)
}

// metaClean says that ValidateObjectMetaAccessor finds no error in meta.
func metaClean(meta metav1.Object, namespaced, nameIsDNSSubdomain bool) bool {
	nameOK := isDNS1123Label
	if nameIsDNSSubdomain {
		nameOK = isDNS1123Subdomain
	}
	if gn := meta.GetGenerateName(); gn != "" && !nameOK(maskTrailingDash(gn)) {
		return false
	}
	if !nameOK(meta.GetName()) {
		return false
	}
	if ns := meta.GetNamespace(); namespaced != (ns != "") || (namespaced && !isDNS1123Label(ns)) {
		return false
	}
	return meta.GetGeneration() >= 0 &&
		labelsClean(meta.GetLabels()) &&
		annotationsClean(meta.GetAnnotations()) &&
		ownerReferencesClean(meta.GetOwnerReferences()) &&
		finalizersClean(meta.GetFinalizers()) &&
		managedFieldsClean(meta.GetManagedFields())
}

// metaUpdateClean says that ValidateObjectMetaAccessorUpdate finds no
// error in newMeta, an update of oldMeta. Values compare as identical,
// which implies apimachinery's semantic equality.
func metaUpdateClean(newMeta, oldMeta metav1.Object) bool {
	if oldMeta.GetDeletionTimestamp() != nil && !noNewFinalizers(newMeta.GetFinalizers(), oldMeta.GetFinalizers()) {
		return false
	}
	return newMeta.GetResourceVersion() != "" &&
		newMeta.GetGeneration() >= oldMeta.GetGeneration() &&
		newMeta.GetName() == oldMeta.GetName() &&
		newMeta.GetNamespace() == oldMeta.GetNamespace() &&
		newMeta.GetUID() == oldMeta.GetUID() &&
		newMeta.GetCreationTimestamp() == oldMeta.GetCreationTimestamp() &&
		sameTimePtr(newMeta.GetDeletionTimestamp(), oldMeta.GetDeletionTimestamp()) &&
		sameInt64Ptr(newMeta.GetDeletionGracePeriodSeconds(), oldMeta.GetDeletionGracePeriodSeconds()) &&
		labelsClean(newMeta.GetLabels()) &&
		annotationsClean(newMeta.GetAnnotations()) &&
		ownerReferencesClean(newMeta.GetOwnerReferences()) &&
		managedFieldsClean(newMeta.GetManagedFields())
}

// maskTrailingDash is apimachinery's maskTrailingDash (generateName's
// trailing dash read as a letter; note it drops the character before
// the dash, as apimachinery's does).
func maskTrailingDash(name string) string {
	if len(name) > 1 && strings.HasSuffix(name, "-") {
		return name[:len(name)-2] + "a"
	}
	return name
}

func sameTimePtr(a, b *metav1.Time) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

func sameInt64Ptr(a, b *int64) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

// noNewFinalizers says that every finalizer of next is in prev.
func noNewFinalizers(next, prev []string) bool {
	for _, f := range next {
		found := false
		for _, p := range prev {
			if f == p {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func labelsClean(labels map[string]string) bool {
	for k, v := range labels {
		if !isLabelKey(k, false) || !isLabelValue(v) {
			return false
		}
	}
	return true
}

// annotationsClean: keys are label keys once lowercased, and the total
// size is within apimachinery's limit.
func annotationsClean(annotations map[string]string) bool {
	size := 0
	for k, v := range annotations {
		if !isLabelKey(k, true) {
			return false
		}
		size += len(k) + len(v)
	}
	return size <= apimachineryvalidation.TotalAnnotationSizeLimitB
}

// ownerReferencesClean: each names a version, kind, name and uid, no
// Event owns anything, and at most one is the controller.
func ownerReferencesClean(refs []metav1.OwnerReference) bool {
	controllers := 0
	for _, ref := range refs {
		gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		if gvk.Version == "" || gvk.Kind == "" || ref.Name == "" || ref.UID == "" {
			return false
		}
		if _, banned := apimachineryvalidation.BannedOwners[gvk]; banned {
			return false
		}
		if ref.Controller != nil && *ref.Controller {
			controllers++
		}
	}
	return controllers <= 1
}

func finalizersClean(finalizers []string) bool {
	orphan, foreground := false, false
	for _, f := range finalizers {
		if !isLabelKey(f, false) {
			return false
		}
		orphan = orphan || f == metav1.FinalizerOrphanDependents
		foreground = foreground || f == metav1.FinalizerDeleteDependents
	}
	return !(orphan && foreground)
}

// managedFieldsClean: operations Apply or Update, type FieldsV1 if set,
// managers short and printable (non-ASCII is left to apimachinery),
// subresource names short.
func managedFieldsClean(entries []metav1.ManagedFieldsEntry) bool {
	for _, e := range entries {
		switch e.Operation {
		case metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate:
		default:
			return false
		}
		if e.FieldsType != "" && e.FieldsType != "FieldsV1" {
			return false
		}
		if len(e.Manager) > metav1validation.FieldManagerMaxLength || len(e.Subresource) > metav1validation.MaxSubresourceNameLength {
			return false
		}
		for i := 0; i < len(e.Manager); i++ {
			if c := e.Manager[i]; c < 0x20 || c > 0x7e {
				return false
			}
		}
	}
	return true
}

// isDNS1123Label is apimachinery's IsDNS1123Label finding nothing: at
// most 63 of [-a-z0-9], starting and ending alphanumeric.
func isDNS1123Label(s string) bool {
	return len(s) <= 63 && isDNSLabelChars(s, false)
}

// isDNS1123Subdomain is apimachinery's IsDNS1123Subdomain finding
// nothing: at most 253 characters, dot-separated DNS labels (of any
// length each, as its regexp).
func isDNS1123Subdomain(s string) bool {
	return len(s) <= 253 && isSubdomainChars(s, false)
}

// isSubdomainChars: dot-separated non-empty runs of [-a-z0-9] (A-Z too
// when fold), each starting and ending alphanumeric.
func isSubdomainChars(s string, fold bool) bool {
	for {
		i := strings.IndexByte(s, '.')
		if i < 0 {
			return isDNSLabelChars(s, fold)
		}
		if !isDNSLabelChars(s[:i], fold) {
			return false
		}
		s = s[i+1:]
	}
}

// isDNSLabelChars: s matches [a-z0-9]([-a-z0-9]*[a-z0-9])? (A-Z too when
// fold).
func isDNSLabelChars(s string, fold bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case fold && 'A' <= c && c <= 'Z':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// isLabelKey is apimachinery's IsLabelKey (of the lowercased key when
// fold) finding nothing: an optional DNS-1123 subdomain prefix and '/',
// then a name of at most 63 characters matching
// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]. Lowercasing changes no
// character these accept but the prefix's letters; a non-ASCII byte,
// which lowercasing could turn into an accepted one, is refused (and left
// to apimachinery).
func isLabelKey(s string, fold bool) bool {
	name := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		prefix := s[:i]
		name = s[i+1:]
		if len(prefix) > 253 || !isSubdomainChars(prefix, fold) || strings.IndexByte(name, '/') >= 0 {
			return false
		}
	}
	return name != "" && len(name) <= 63 && isLabelNameChars(name)
}

// isLabelValue is apimachinery's IsLabelValue finding nothing: empty, or
// a label key's name part.
func isLabelValue(s string) bool {
	return s == "" || (len(s) <= 63 && isLabelNameChars(s))
}

// isLabelNameChars: s matches ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].
func isLabelNameChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case (c == '-' || c == '_' || c == '.') && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// validateLabels is metav1validation.ValidateLabels.
func validateLabels(labels map[string]string, fldPath *field.Path) field.ErrorList {
	if labelsClean(labels) {
		return nil
	}
	return metav1validation.ValidateLabels(labels, fldPath)
}

// validateLabelName is metav1validation.ValidateLabelName.
func validateLabelName(name string, fldPath *field.Path) field.ErrorList {
	if isLabelKey(name, false) {
		return nil
	}
	return metav1validation.ValidateLabelName(name, fldPath)
}

// dns1123LabelMsgs is utilvalidation.IsDNS1123Label.
func dns1123LabelMsgs(value string) []string {
	if isDNS1123Label(value) {
		return nil
	}
	return utilvalidation.IsDNS1123Label(value)
}

// dnsSubdomainNameMsgs is apimachinery's NameIsDNSSubdomain of a name
// (not a prefix).
func dnsSubdomainNameMsgs(name string) []string {
	if isDNS1123Subdomain(name) {
		return nil
	}
	return apimachineryvalidation.NameIsDNSSubdomain(name, false)
}

// labelValueMsgs is utilvalidation.IsValidLabelValue.
func labelValueMsgs(value string) []string {
	if isLabelValue(value) {
		return nil
	}
	return utilvalidation.IsValidLabelValue(value)
}
