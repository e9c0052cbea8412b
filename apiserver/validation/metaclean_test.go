package validation

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// nameCases are strings at the edges of the DNS and label-key rules.
var nameCases = []string{
	"", "a", "A", "0", "-", "_", ".", "/", "a-", "-a", "a-b", "a_b", "a.b", "a..b", ".a", "a.",
	"abc-def.ghi", "Abc", "abc.Def", "a/b", "/b", "a/", "a/b/c", "example.com/name", "example.com/Name_1.x",
	"Example.com/name", "ex_ample.com/name", "example.com./name", "k8s.io/x-", "batch.kubernetes.io/job-name",
	"héllo", "a\u212ab", "a b", "a\nb", "a\n", "\x00",
	strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 253), strings.Repeat("a", 254),
	strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 127) + "a",
	strings.Repeat("a", 100) + "." + strings.Repeat("b", 100),
	strings.Repeat("a", 253) + "/n", strings.Repeat("a", 254) + "/n", "p/" + strings.Repeat("n", 63), "p/" + strings.Repeat("n", 64),
}

// randomNames are strings over the rules' alphabet and a few others.
func randomNames(n int) []string {
	const alphabet = "aZ09-_./ \u212a"
	r := rand.New(rand.NewPCG(1, 2))
	chars := []rune(alphabet)
	out := make([]string, n)
	for i := range out {
		b := make([]rune, r.IntN(12))
		for j := range b {
			b[j] = chars[r.IntN(len(chars))]
		}
		out[i] = string(b)
	}
	return out
}

// The hand-written predicates accept exactly what apimachinery's checks
// find nothing in, but for non-ASCII input, which they leave to
// apimachinery (lowercasing turns the Kelvin sign into a 'k').
func TestCleanPredicatesMatchApimachinery(t *testing.T) {
	checks := []struct {
		name     string
		clean    func(string) bool
		upstream func(string) []string
	}{
		{"IsDNS1123Label", isDNS1123Label, utilvalidation.IsDNS1123Label},
		{"IsDNS1123Subdomain", isDNS1123Subdomain, utilvalidation.IsDNS1123Subdomain},
		{"IsQualifiedName", func(s string) bool { return isLabelKey(s, false) }, utilvalidation.IsQualifiedName},
		{"IsQualifiedName of lowercase", func(s string) bool { return isLabelKey(s, true) },
			func(s string) []string { return utilvalidation.IsQualifiedName(strings.ToLower(s)) }},
		{"IsValidLabelValue", isLabelValue, utilvalidation.IsValidLabelValue},
	}
	inputs := append(slices.Clone(nameCases), randomNames(20000)...)
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			for _, s := range inputs {
				want := len(c.upstream(s)) == 0
				got := c.clean(s)
				if got != want && (got || isASCII(s)) {
					t.Errorf("%q: clean = %v, apimachinery finds nothing = %v", s, got, want)
				}
			}
		})
	}
}

// The metadata checks answer exactly apimachinery's errors, valid or not.
func TestObjectMetaChecksMatchApimachinery(t *testing.T) {
	ctrl := true
	valid := func() *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: "pi-0-abcde", Namespace: "default", ResourceVersion: "7", UID: "u1", Generation: 1,
			Labels:          map[string]string{"batch.kubernetes.io/job-name": "pi", "app": ""},
			Annotations:     map[string]string{"Example.COM/Note": "x"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "pi", UID: "j1", Controller: &ctrl}},
			Finalizers:      []string{"batch.kubernetes.io/job-tracking"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1"}},
		}
	}
	now := metav1.Now()
	cases := []struct {
		name   string
		mutate func(m *metav1.ObjectMeta)
	}{
		{"valid", func(*metav1.ObjectMeta) {}},
		{"no name", func(m *metav1.ObjectMeta) { m.Name = "" }},
		{"generateName", func(m *metav1.ObjectMeta) { m.Name, m.GenerateName = "", "pi-0-" }},
		{"bad generateName", func(m *metav1.ObjectMeta) { m.GenerateName = "Pi-" }},
		{"name with dots", func(m *metav1.ObjectMeta) { m.Name = "a.b" }},
		{"bad name", func(m *metav1.ObjectMeta) { m.Name = "A_b" }},
		{"no namespace", func(m *metav1.ObjectMeta) { m.Namespace = "" }},
		{"bad namespace", func(m *metav1.ObjectMeta) { m.Namespace = "a.b" }},
		{"negative generation", func(m *metav1.ObjectMeta) { m.Generation = -1 }},
		{"bad label key", func(m *metav1.ObjectMeta) { m.Labels["a/b/c"] = "x" }},
		{"bad label value", func(m *metav1.ObjectMeta) { m.Labels["ok"] = "-x" }},
		{"bad annotation", func(m *metav1.ObjectMeta) { m.Annotations["Bad Key"] = "v" }},
		{"annotations too large", func(m *metav1.ObjectMeta) { m.Annotations["big"] = strings.Repeat("x", 256*1024) }},
		{"owner without version", func(m *metav1.ObjectMeta) { m.OwnerReferences[0].APIVersion = "" }},
		{"owner without uid", func(m *metav1.ObjectMeta) { m.OwnerReferences[0].UID = "" }},
		{"event owner", func(m *metav1.ObjectMeta) { m.OwnerReferences[0].APIVersion, m.OwnerReferences[0].Kind = "v1", "Event" }},
		{"two controllers", func(m *metav1.ObjectMeta) {
			m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "p1", Controller: &ctrl})
		}},
		{"bad finalizer", func(m *metav1.ObjectMeta) { m.Finalizers = append(m.Finalizers, "a b") }},
		{"orphan and foreground", func(m *metav1.ObjectMeta) {
			m.Finalizers = append(m.Finalizers, metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents)
		}},
		{"bad operation", func(m *metav1.ObjectMeta) { m.ManagedFields[0].Operation = "Patch" }},
		{"bad fieldsType", func(m *metav1.ObjectMeta) { m.ManagedFields[0].FieldsType = "FieldsV2" }},
		{"long manager", func(m *metav1.ObjectMeta) { m.ManagedFields[0].Manager = strings.Repeat("m", 129) }},
		{"unprintable manager", func(m *metav1.ObjectMeta) { m.ManagedFields[0].Manager = "a\tb" }},
		{"non-ASCII manager", func(m *metav1.ObjectMeta) { m.ManagedFields[0].Manager = "gérant" }},
		{"long subresource", func(m *metav1.ObjectMeta) { m.ManagedFields[0].Subresource = strings.Repeat("s", 257) }},
	}
	updates := []struct {
		name   string
		mutate func(next, old *metav1.ObjectMeta)
	}{
		{"same", func(_, _ *metav1.ObjectMeta) {}},
		{"no resourceVersion", func(next, _ *metav1.ObjectMeta) { next.ResourceVersion = "" }},
		{"generation decremented", func(next, _ *metav1.ObjectMeta) { next.Generation = 0 }},
		{"renamed", func(next, _ *metav1.ObjectMeta) { next.Name = "other" }},
		{"namespace changed", func(next, _ *metav1.ObjectMeta) { next.Namespace = "other" }},
		{"uid changed", func(next, _ *metav1.ObjectMeta) { next.UID = "u2" }},
		{"creationTimestamp changed", func(next, _ *metav1.ObjectMeta) { next.CreationTimestamp = now }},
		{"same creationTimestamp in another zone", func(next, old *metav1.ObjectMeta) {
			old.CreationTimestamp = now
			next.CreationTimestamp = metav1.NewTime(now.UTC())
		}},
		{"deletionTimestamp set", func(next, _ *metav1.ObjectMeta) { next.DeletionTimestamp = &now }},
		{"same deletionTimestamp", func(next, old *metav1.ObjectMeta) { t := now; next.DeletionTimestamp, old.DeletionTimestamp = &now, &t }},
		{"grace period changed", func(next, old *metav1.ObjectMeta) {
			a, b := int64(1), int64(2)
			next.DeletionGracePeriodSeconds, old.DeletionGracePeriodSeconds = &a, &b
		}},
		{"finalizer added while deleting", func(next, old *metav1.ObjectMeta) {
			old.DeletionTimestamp, next.DeletionTimestamp = &now, &now
			next.Finalizers = append(next.Finalizers, "example.com/new")
		}},
		{"finalizer removed while deleting", func(next, old *metav1.ObjectMeta) {
			old.DeletionTimestamp, next.DeletionTimestamp = &now, &now
			next.Finalizers = nil
		}},
	}
	path := field.NewPath("metadata")
	for _, tc := range cases {
		t.Run("create/"+tc.name, func(t *testing.T) {
			for _, subdomain := range []bool{true, false} {
				m := valid()
				tc.mutate(m)
				nameFn := apimachineryvalidation.NameIsDNSLabel
				if subdomain {
					nameFn = apimachineryvalidation.NameIsDNSSubdomain
				}
				want := apimachineryvalidation.ValidateObjectMetaAccessor(m, true, nameFn, path)
				assertSameErrors(t, ValidateObjectMetaAccessor(m, true, subdomain, path), want)
				want = apimachineryvalidation.ValidateObjectMetaAccessor(m, false, nameFn, path)
				assertSameErrors(t, ValidateObjectMetaAccessor(m, false, subdomain, path), want)
			}
		})
		t.Run("update/"+tc.name, func(t *testing.T) {
			old, next := valid(), valid()
			tc.mutate(next)
			want := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(next, old, path)
			assertSameErrors(t, ValidateObjectMetaAccessorUpdate(next, old, path), want)
		})
	}
	for _, tc := range updates {
		t.Run("update/"+tc.name, func(t *testing.T) {
			old, next := valid(), valid()
			tc.mutate(next, old)
			want := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(next, old, path)
			assertSameErrors(t, ValidateObjectMetaAccessorUpdate(next, old, path), want)
		})
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// assertSameErrors compares error lists as sorted strings (label errors
// come in map order).
func assertSameErrors(t *testing.T, got, want field.ErrorList) {
	t.Helper()
	gotS, wantS := errStrings(got), errStrings(want)
	slices.Sort(gotS)
	slices.Sort(wantS)
	if !slices.Equal(gotS, wantS) {
		t.Errorf("errors:\n got: %q\nwant: %q", gotS, wantS)
	}
}

// The message forms answer apimachinery's messages, valid or not.
func TestCleanMessagesMatchApimachinery(t *testing.T) {
	msgs := []struct {
		name          string
		got, upstream func(string) []string
	}{
		{"IsDNS1123Label", dns1123LabelMsgs, utilvalidation.IsDNS1123Label},
		{"NameIsDNSSubdomain", dnsSubdomainNameMsgs, func(s string) []string { return apimachineryvalidation.NameIsDNSSubdomain(s, false) }},
		{"IsValidLabelValue", labelValueMsgs, utilvalidation.IsValidLabelValue},
	}
	path := field.NewPath("spec", "nodeSelector")
	for _, s := range append(slices.Clone(nameCases), randomNames(2000)...) {
		for _, m := range msgs {
			if got, want := m.got(s), m.upstream(s); !slices.Equal(got, want) {
				t.Errorf("%s(%q) = %q, want %q", m.name, s, got, want)
			}
		}
		assertSameErrors(t, validateLabelName(s, path), metav1validation.ValidateLabelName(s, path))
		labels := map[string]string{s: "v", "app": s}
		assertSameErrors(t, validateLabels(labels, path), metav1validation.ValidateLabels(labels, path))
	}
}
