package validation

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Updates skip re-checking labels and annotations they leave unchanged, and
// report changed ones exactly as the full metadata checks do.
func TestPodUpdateMetadataErrorsMatchFullChecks(t *testing.T) {
	badLabels := map[string]string{"a/b/c": "x", "ok": "-bad-"}
	badAnnotations := map[string]string{"Bad Key": "v"}
	cases := []struct {
		name   string
		mutate func(p *corev1.Pod)
		errs   int
	}{
		{"unchanged", func(*corev1.Pod) {}, 0},
		{"valid label added", func(p *corev1.Pod) { p.Labels["new"] = "v" }, 0},
		{"invalid labels", func(p *corev1.Pod) { p.Labels = badLabels }, 2 * 3},
		{"invalid annotation", func(p *corev1.Pod) { p.Annotations = badAnnotations }, 3},
		{"both invalid", func(p *corev1.Pod) { p.Labels, p.Annotations = badLabels, badAnnotations }, 2*3 + 3},
		{"labels removed", func(p *corev1.Pod) { p.Labels = nil }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validPod()
			old.ResourceVersion = "1"
			old.Labels = map[string]string{"app": "x"}
			old.Annotations = map[string]string{"note": "y"}
			pod := old.DeepCopy()
			tc.mutate(pod)
			path := field.NewPath("metadata")
			full := apimachineryvalidation.ValidateObjectMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta, path)
			full = append(full, apimachineryvalidation.ValidateObjectMeta(&pod.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, path)...)
			full = append(full, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(pod, old, path)...)
			got := ValidatePodUpdate(pod, old)
			got = append(got, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(UnchangedHidden(pod, old), old, path)...)
			// Sorted: label errors come in map order.
			gotS, fullS := errStrings(got), errStrings(full)
			slices.Sort(gotS)
			slices.Sort(fullS)
			if !slices.Equal(gotS, fullS) {
				t.Errorf("errors:\n got: %q\nwant: %q", gotS, fullS)
			}
			if len(got) != tc.errs {
				t.Errorf("%d errors, want %d: %q", len(got), tc.errs, errStrings(got))
			}
		})
	}
}
