package cli

import (
	"bytes"
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func finishedIndexedJob(completed string, cond batchv1.JobConditionType) *batchv1.Job {
	sel := map[string]string{batchv1.ControllerUidLabel: "uid-1"}
	tmplLabels := map[string]string{batchv1.ControllerUidLabel: "uid-1", batchv1.JobNameLabel: "train",
		legacyControllerUIDLabel: "uid-1", legacyJobNameLabel: "train", "app": "train"}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml", UID: "uid-1",
			Labels:      map[string]string{"app": "train", batchv1.ControllerUidLabel: "uid-1"},
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "team": "a"}},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](10), Parallelism: ptr.To[int32](4),
			CompletionMode:       ptr.To(batchv1.IndexedCompletion),
			BackoffLimitPerIndex: ptr.To[int32](1),
			Selector:             &metav1.LabelSelector{MatchLabels: sel},
			ManualSelector:       ptr.To(false),
			Template:             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmplLabels}},
		},
		Status: batchv1.JobStatus{CompletedIndexes: completed, Conditions: []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}},
	}
}

func TestPlanRerun(t *testing.T) {
	cases := map[string]struct {
		job       *batchv1.Job
		wantRerun string
		wantSucc  int32
		wantErr   string
	}{
		"failed indexes and never run": {job: finishedIndexedJob("0-2,4,6,7", batchv1.JobFailed), wantRerun: "3,5,8,9", wantSucc: 6},
		"none completed":               {job: finishedIndexedJob("", batchv1.JobFailed), wantRerun: "0-9"},
		"all completed":                {job: finishedIndexedJob("0-9", batchv1.JobComplete), wantErr: "job train has no failed indexes: all 10 completed"},
		"not finished": {job: func() *batchv1.Job {
			j := finishedIndexedJob("0", batchv1.JobFailed)
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue}}
			return j
		}(), wantErr: "job train has not finished (no Complete or Failed condition): wait for it first"},
		"not indexed": {job: func() *batchv1.Job {
			j := finishedIndexedJob("", batchv1.JobFailed)
			j.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
			return j
		}(), wantErr: "job train is not Indexed: rerun --failed needs completionMode Indexed, whose index numbers it keeps"},
		"bad completedIndexes": {job: finishedIndexedJob("0-12", batchv1.JobFailed), wantErr: `job train: status.completedIndexes "0-12": interval "0-12" out of 0-9`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := planRerun(tc.job)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || p.rerun != tc.wantRerun || p.succeeded != tc.wantSucc || p.completed != tc.job.Status.CompletedIndexes {
				t.Fatalf("plan %+v, %v; want rerun %q succeeded %d", p, err, tc.wantRerun, tc.wantSucc)
			}
		})
	}
}

func TestRerunJobShape(t *testing.T) {
	orig := finishedIndexedJob("0-2,4,6,7", batchv1.JobFailed)
	j := rerunJob(orig, "3,5,8,9")
	if j.Spec.Selector != nil || j.Spec.ManualSelector != nil || !ptr.Deref(j.Spec.Suspend, false) {
		t.Fatalf("selector %v manualSelector %v suspend %v: want none, none, true", j.Spec.Selector, j.Spec.ManualSelector, j.Spec.Suspend)
	}
	if *j.Spec.Completions != 10 || *j.Spec.Parallelism != 4 || *j.Spec.BackoffLimitPerIndex != 1 {
		t.Fatalf("spec %+v: want the original's completions, parallelism and backoffLimitPerIndex", j.Spec)
	}
	if got := j.Spec.Template.Labels; len(got) != 1 || got["app"] != "train" {
		t.Fatalf("template labels %v, want only app=train", got)
	}
	if got := j.Labels; len(got) != 2 || got["app"] != "train" || got[RerunOfLabel] != "train" {
		t.Fatalf("labels %v", got)
	}
	want := map[string]string{RerunOfUIDAnnotation: "uid-1", RerunIndexesAnnotation: "3,5,8,9", "team": "a"}
	if len(j.Annotations) != len(want) {
		t.Fatalf("annotations %v, want %v", j.Annotations, want)
	}
	for k, v := range want {
		if j.Annotations[k] != v {
			t.Fatalf("annotations %v, want %v", j.Annotations, want)
		}
	}
	if orig.Spec.Selector == nil || orig.Spec.Template.Labels[batchv1.JobNameLabel] != "train" {
		t.Fatal("the original was modified")
	}
}

// TestRerunFailedCreatesNumberedJobs: each re-run takes the next free name,
// starts from the original's completed indexes and is resumed.
func TestRerunFailedCreatesNumberedJobs(t *testing.T) {
	client := fake.NewClientset(finishedIndexedJob("0-2,4,6,7", batchv1.JobFailed))
	ctx := context.Background()
	for _, name := range []string{"train-rerun-1", "train-rerun-2"} {
		var out bytes.Buffer
		if err := rerunFailed(ctx, client, "ml", "train", &out); err != nil {
			t.Fatalf("rerun: %v", err)
		}
		if want := "job.batch/" + name + " created: runs indexes 3,5,8,9 of job train (completedIndexes 0-2,4,6,7 carried over)\n"; out.String() != want {
			t.Fatalf("output %q, want %q", out.String(), want)
		}
		j, err := client.BatchV1().Jobs("ml").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		if j.Status.CompletedIndexes != "0-2,4,6,7" || j.Status.Succeeded != 6 || ptr.Deref(j.Spec.Suspend, true) {
			t.Fatalf("%s: completedIndexes %q succeeded %d suspend %v", name, j.Status.CompletedIndexes, j.Status.Succeeded, j.Spec.Suspend)
		}
	}
	if err := rerunFailed(ctx, client, "ml", "missing", &bytes.Buffer{}); err == nil {
		t.Fatal("rerun of a missing Job succeeded")
	}
}
