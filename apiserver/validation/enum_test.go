package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateEnum(t *testing.T) {
	path := field.NewPath("spec", "imagePullPolicy")
	cases := map[corev1.PullPolicy][]string{
		corev1.PullNever: nil,
		"":               {`spec.imagePullPolicy: Required value`},
		"Sometimes":      {`spec.imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`},
	}
	for v, want := range cases {
		errs := validateEnum(v, path, corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)
		if len(errs) != len(want) {
			t.Fatalf("%q: got %v, want %v", v, errs, want)
		}
		for i, e := range errs {
			if e.Error() != want[i] {
				t.Errorf("%q: got %q, want %q", v, e.Error(), want[i])
			}
		}
	}
}
