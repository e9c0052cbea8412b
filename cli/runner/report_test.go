package runner

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Plain output is what scripts and the e2e tests read: no escape
// sequences, a progress line only when the counters change.
func TestPlainReporter(t *testing.T) {
	var stdout, stderr bytes.Buffer
	r := NewPlainReporter(&stdout, &stderr)
	r.Created("job.batch/pi")
	running := []ItemResult{{Kind: "Job", Name: "pi", Counts: Counts{Active: 1, Completions: 1}}}
	r.Update(Snapshot{Items: running})
	r.Update(Snapshot{Items: running, Pods: []PodState{{Name: "pi-x", Phase: corev1.PodRunning}}}) // same counters: no line
	r.Log(LogLine{Pod: "pi-x", Text: "3.14"})
	r.Log(LogLine{Pod: "idx-0", Text: "hello", Prefixed: true})
	r.Update(Snapshot{Items: []ItemResult{{Kind: "Job", Name: "pi", Outcome: OutcomeComplete, Counts: Counts{Succeeded: 1, Completions: 1}}}})
	r.Message("warning: job.batch/pi is still being deleted")
	wantErr := "job.batch/pi created\n" +
		"job/pi: 1 active, 0/1 succeeded, 0 failed\n" +
		"job/pi: 0 active, 1/1 succeeded, 0 failed — Complete\n" +
		"warning: job.batch/pi is still being deleted\n"
	if stderr.String() != wantErr {
		t.Errorf("stderr:\n%q\nwant\n%q", stderr.String(), wantErr)
	}
	if want := "3.14\n[idx-0] hello\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
}

func TestPodState(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cases := []struct {
		name      string
		ownerKind string
		labels    map[string]string
		wantIndex int
	}{
		{"Indexed Job pod", "Job", map[string]string{completionIndexLabel: "7"}, 7},
		{"NonIndexed Job pod", "Job", nil, -1},
		{"JobSet pod by its child Job's global index", "JobSet", map[string]string{completionIndexLabel: "1", jobGlobalIndexLabel: "4"}, 4},
		{"unparsable index", "Job", map[string]string{completionIndexLabel: "x"}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: tc.labels, CreationTimestamp: created},
				Status:     corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{RestartCount: 2}, {RestartCount: 1}}},
			}
			got := podState(3, pod, tc.ownerKind)
			want := PodState{Item: 3, Name: "p", Index: tc.wantIndex, Phase: corev1.PodRunning, Restarts: 3, Created: created.Time}
			if got != want {
				t.Errorf("podState = %+v, want %+v", got, want)
			}
		})
	}
}
