package podsubresources

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestBound(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := &Handlers{Clock: clocktesting.NewFakePassiveClock(now)}
	deleting := metav1.NewTime(now)
	for _, tc := range []struct {
		name    string
		pod     corev1.Pod
		binding corev1.Binding
		wantErr string
	}{
		{"pending pod is bound", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1", ResourceVersion: "7"}},
			corev1.Binding{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}}, Target: corev1.ObjectReference{Name: "n1"}}, ""},
		{"UID precondition", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}},
			corev1.Binding{ObjectMeta: metav1.ObjectMeta{UID: "u2"}, Target: corev1.ObjectReference{Name: "n1"}},
			`Operation cannot be fulfilled on pods "p": Precondition failed: UID in precondition: u2, UID in object meta: u1`},
		{"pod being deleted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: &deleting}},
			corev1.Binding{Target: corev1.ObjectReference{Name: "n1"}},
			`Operation cannot be fulfilled on pods "p": pod p is being deleted, cannot be assigned to a host`},
		{"pod already assigned", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n0"}},
			corev1.Binding{Target: corev1.ObjectReference{Name: "n1"}},
			`Operation cannot be fulfilled on pods "p": pod p is already assigned to node "n0"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := tc.pod.DeepCopy()
			got, err := h.bound(cur, &tc.binding, corev1.Resource("pods"))
			if gotErr := errString(err); gotErr != tc.wantErr {
				t.Fatalf("bound error %q, want %q", gotErr, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got.Spec.NodeName != "n1" || got.ResourceVersion != "" || got.Annotations["a"] != "b" {
				t.Errorf("bound pod: node %q, resourceVersion %q, annotations %v", got.Spec.NodeName, got.ResourceVersion, got.Annotations)
			}
			want := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}
			if len(got.Status.Conditions) != 1 || got.Status.Conditions[0] != want {
				t.Errorf("conditions %v, want [%v]", got.Status.Conditions, want)
			}
			if cur.Spec.NodeName != "" || len(cur.Status.Conditions) != 0 || cur.Annotations != nil {
				t.Errorf("the shared current pod changed: %+v", cur)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
