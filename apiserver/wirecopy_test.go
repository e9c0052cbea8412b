package apiserver

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// wireCopy gives what a protobuf round trip gives, and leaves the
// original alone.
func TestWireCopy(t *testing.T) {
	at := time.Date(2026, 11, 26, 13, 0, 1, 987654321, time.UTC)
	for _, tc := range []struct {
		name     string
		in, want runtime.Object
	}{
		{"times in whole seconds, empty lists and maps absent",
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}, Finalizers: []string{}, CreationTimestamp: metav1.NewTime(at)},
				Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: "Ready", LastTransitionTime: metav1.NewTime(at)}}}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(time.Unix(at.Unix(), 0).Local())},
				Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: "Ready", LastTransitionTime: metav1.NewTime(time.Unix(at.Unix(), 0).Local())}}}}},
		{"zero times stay zero",
			&corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: "Ready"}}}},
			&corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: "Ready"}}}}},
		{"micro times in microseconds",
			&eventsv1.Event{EventTime: metav1.NewMicroTime(at)},
			&eventsv1.Event{EventTime: metav1.NewMicroTime(time.Unix(at.Unix(), 987654000).Local())}},
		{"quantities as parsed from their canonical form",
			&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(1500, resource.DecimalSI)}}}}}},
			&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}}}}}},
		{"byte strings keep their form",
			&corev1.Secret{Data: map[string][]byte{"a": {}}},
			&corev1.Secret{Data: map[string][]byte{"a": {}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.DeepCopyObject()
			got := wireCopy(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("wireCopy = %#v, want %#v", got, tc.want)
			}
			if !reflect.DeepEqual(tc.in, before) {
				t.Errorf("wireCopy changed its input: %#v", tc.in)
			}
		})
	}
}
