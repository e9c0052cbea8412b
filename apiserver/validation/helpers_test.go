package validation

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// errStrings renders each error as upstream does in a 422 message.
func errStrings(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func assertErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	got := errStrings(errs)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n got: %q\nwant: %q", got, want)
	}
}

// validJob is a defaulted, prepared Job as kube-apiserver would validate it.
func validJob() *batchv1.Job {
	labels := map[string]string{
		"job-name": "pi", "batch.kubernetes.io/job-name": "pi",
		"controller-uid": "uid-1", "batch.kubernetes.io/controller-uid": "uid-1",
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "uid-1", ResourceVersion: "1"},
		Spec: batchv1.JobSpec{
			Parallelism:          ptr.To(int32(1)),
			Completions:          ptr.To(int32(1)),
			BackoffLimit:         ptr.To(int32(6)),
			CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
			Suspend:              ptr.To(false),
			ManualSelector:       ptr.To(false),
			PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "uid-1"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       validPodSpec(corev1.RestartPolicyNever),
			},
		},
	}
}

func validPodSpec(rp corev1.RestartPolicy) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy:                 rp,
		DNSPolicy:                     corev1.DNSClusterFirst,
		TerminationGracePeriodSeconds: ptr.To(int64(30)),
		SchedulerName:                 "default-scheduler",
		SecurityContext:               &corev1.PodSecurityContext{},
		Containers: []corev1.Container{{
			Name: "main", Image: "perl:5.34.0",
			ImagePullPolicy:          corev1.PullIfNotPresent,
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}},
	}
}

func validPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pi-abcde", Namespace: "default", ResourceVersion: "1"},
		Spec:       validPodSpec(corev1.RestartPolicyAlways),
	}
}
