package endpoints

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestWriteTableMatchesWriteJSON: the Table written row by row is the
// WriteJSON of the Table, byte for byte, for every includeObject, for
// objects with characters JSON escapes, and for no rows.
func TestWriteTableMatchesWriteJSON(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	c := NewCodec(scheme.Scheme, 1<<20, clocktesting.NewFakeClock(now), nil)
	var pods []runtime.Object
	for i := range 3 {
		pods = append(pods, &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i), Namespace: "default", ResourceVersion: "12",
				CreationTimestamp: metav1.NewTime(now.Add(-time.Duration(i) * time.Hour)),
				Labels:            map[string]string{"a": "<b>&"}, Annotations: map[string]string{"note": "ü \u2028 \"q\""},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
					FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{}}}`)}}},
			Spec:   corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true, RestartCount: 2}}},
		})
	}
	job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default"}}
	lm := metav1.ListMeta{ResourceVersion: "12", Continue: "abc"}
	for _, tc := range []struct {
		res  *registry.Resource
		objs []runtime.Object
	}{
		{registry.Pods(), pods},
		{registry.Pods(), nil},
		{registry.Jobs(), []runtime.Object{job}},
	} {
		for _, include := range []string{"", "Metadata", "Object", "None"} {
			r := httptest.NewRequest("GET", "/api/v1/pods?includeObject="+include, nil)
			want := httptest.NewRecorder()
			WriteJSON(want, 200, c.Table(r, tc.res, tc.objs, lm))
			got := httptest.NewRecorder()
			c.WriteTable(got, r, tc.res, tc.objs, lm)
			if got.Body.String() != want.Body.String() || got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
				t.Errorf("%s includeObject=%q:\n got %d %s\nwant %d %s", tc.res.Kind, include, got.Code, got.Body, want.Code, want.Body)
			}
		}
	}
}
