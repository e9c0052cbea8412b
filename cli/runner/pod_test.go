package runner

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFailedPodsCarryTheirMessage(t *testing.T) {
	startError := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError",
		Message: `failed to start container process: exec: "/nope": no such file or directory`}}
	cases := []struct {
		name string
		pod  corev1.Pod
		want []string
	}{
		{"container that could not start", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodFailed,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", State: startError}}}},
			[]string{`pod p container c exited 128 StartError: failed to start container process: exec: "/nope": no such file or directory`}},
		{"init container first, zero exits left out", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodFailed,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "ok", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}}},
			[]string{"pod p container init exited 2 Error"}},
		{"pod failed as a whole", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodFailed,
			Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}},
			[]string{"pod p failed DeadlineExceeded: Pod was active on the node longer than the specified deadline"}},
		{"multi-line message is indented", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodFailed,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "line one\nline two\n"}}}}}},
			[]string{"pod p container c exited 1 Error: line one\n    line two"}},
		{"succeeded pod", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range podExits(&tc.pod) {
				got = append(got, describePodExit(e))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestEvaluatePod(t *testing.T) {
	cases := []struct {
		name        string
		y           string
		wantOutcome Outcome
		wantHead    string
	}{
		{"running", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Running}\n", OutcomeRunning, "pod/p did not finish"},
		{"pending", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Pending}\n", OutcomeRunning, "pod/p did not finish"},
		{"succeeded", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Succeeded}\n", OutcomeComplete, "pod/p Succeeded"},
		{"failed with the pod's reason", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Failed, reason: Evicted, message: low on memory}\n", OutcomeFailed, "pod/p Failed (Evicted): low on memory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Evaluate(obj(t, tc.y))
			if got.Outcome != tc.wantOutcome || Headline(got) != tc.wantHead {
				t.Errorf("outcome %q headline %q; want %q %q", got.Outcome, Headline(got), tc.wantOutcome, tc.wantHead)
			}
		})
	}
}

func TestSummaryShowsWhyAContainerFailed(t *testing.T) {
	var buf bytes.Buffer
	WriteSummary(&buf, &Result{ExitCode: ExitFailed, Items: []ItemResult{{Kind: "Job", Name: "j", Outcome: OutcomeFailed,
		Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit",
		FailedPods: []PodExit{{Pod: "j-x", Container: "c", ExitCode: 128, Reason: "StartError", Message: "failed to start container process"}}}}})
	for _, want := range []string{
		"job/j Failed (BackoffLimitExceeded): Job has reached the specified backoff limit\n",
		"  pod j-x container c exited 128 StartError: failed to start container process\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
}
