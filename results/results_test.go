package results

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestName(t *testing.T) {
	long := strings.Repeat("a", 250)
	cases := []struct {
		pod, container string
		attempt        int32
		want           string
	}{
		{"pi-0-abcde", "main", 0, "pi-0-abcde.main.0"},
		{"a.b", "c", 2, "a.b.c.2"},
		{"a", "b", 12, "a.b.12"},
	}
	for _, tc := range cases {
		if got := Name(tc.pod, tc.container, tc.attempt); got != tc.want {
			t.Errorf("Name(%s, %s, %d) = %s, want %s", tc.pod, tc.container, tc.attempt, got, tc.want)
		}
	}
	got := Name(long, "main", 3)
	if len(got) != maxNameLength || !strings.HasSuffix(got, ".main.3") {
		t.Errorf("long name = %s (%d), want %d characters ending .main.3", got, len(got), maxNameLength)
	}
	if Name(long, "main", 3) != got || Name(long+"b", "main", 3) == got {
		t.Error("long names are not deterministic and distinct")
	}
}

func TestTerminated(t *testing.T) {
	term := func(code int32) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: code}
	}
	st := &corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: term(0)}}},
		ContainerStatuses: []corev1.ContainerStatus{
			// Restarted and running again: its previous attempt is terminated.
			{Name: "a", RestartCount: 2, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: term(1)}},
			// Restarted and terminated again: both attempts.
			{Name: "b", RestartCount: 1, State: corev1.ContainerState{Terminated: term(3)},
				LastTerminationState: corev1.ContainerState{Terminated: term(2)}},
			{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		},
	}
	var got []string
	for _, a := range Terminated(st) {
		got = append(got, a.Key()+map[bool]string{true: " previous", false: ""}[a.Previous])
	}
	want := []string{"init.0", "a.1 previous", "b.0 previous", "b.1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("attempts = %v, want %v", got, want)
	}
}

func TestNew(t *testing.T) {
	start, end := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 7, 0, time.UTC))
	ctrl := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pi-1-xyz", Namespace: "ml", UID: "pod-uid",
			Labels: map[string]string{"batch.kubernetes.io/job-name": "pi", "batch.kubernetes.io/job-completion-index": "1",
				"jobset.sigs.k8s.io/jobset-name": "train", "app": "not-copied"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "pi", UID: "job-uid", Controller: &ctrl}}},
		Spec: corev1.PodSpec{NodeName: "node-1"},
	}
	at := Attempt{Container: "main", Number: 2, State: &corev1.ContainerStateTerminated{ExitCode: 137, Signal: 9, Reason: "OOMKilled",
		Message: "m", StartedAt: start, FinishedAt: end}}
	r := New(pod, at, "tail\n", true)
	idx := int32(1)
	want := ContainerResultSpec{PodName: "pi-1-xyz", PodUID: "pod-uid", NodeName: "node-1", JobName: "pi", JobUID: "job-uid",
		CompletionIndex: &idx, JobSetName: "train", ContainerName: "main", Attempt: 2, ExitCode: 137, Signal: 9, Reason: "OOMKilled",
		Message: "m", StartedAt: start, FinishedAt: end, LogTail: "tail\n", LogTruncated: true}
	if !reflect.DeepEqual(r.Spec, want) {
		t.Errorf("spec = %+v\nwant %+v", r.Spec, want)
	}
	if r.Name != "pi-1-xyz.main.2" || r.Namespace != "ml" || len(r.OwnerReferences) != 0 {
		t.Errorf("meta = %s/%s owners %v, want ml/pi-1-xyz.main.2 without owners", r.Namespace, r.Name, r.OwnerReferences)
	}
	if _, ok := r.Labels["app"]; ok || r.Labels["batch.kubernetes.io/job-name"] != "pi" || r.Labels["jobset.sigs.k8s.io/jobset-name"] != "train" {
		t.Errorf("labels = %v, want the batch and jobset labels only", r.Labels)
	}
	u, err := ToUnstructured(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := FromUnstructured(u)
	if err != nil || !apiequality.Semantic.DeepEqual(back.Spec, r.Spec) || u.GetAPIVersion() != "results.batchlet.dev/v1" || u.GetKind() != Kind {
		t.Errorf("round trip = %+v %v (%s %s)", back, err, u.GetAPIVersion(), u.GetKind())
	}
}

func TestTailBuffer(t *testing.T) {
	cases := []struct {
		name          string
		max           int
		writes        []string
		want          string
		wantTruncated bool
	}{
		{"fits", 16, []string{"a\n", "b\n"}, "a\nb\n", false},
		{"cut at a line", 8, []string{"line1\n", "line2\n", "line3\n"}, "line3\n", true},
		{"one long write", 8, []string{"xxxxxxxxxxxx\nabc\n"}, "abc\n", true},
		{"no newline kept", 4, []string{"abcdefgh"}, "efgh", true},
		{"many small writes", 6, []string{"1\n", "2\n", "3\n", "4\n", "5\n", "6\n", "7\n"}, "5\n6\n7\n", true},
		{"cut mid-line", 5, []string{"ab\ncd\nef\n"}, "ef\n", true},
		{"invalid utf-8", 16, []string{"ok \xff\n"}, "ok \uFFFD\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &TailBuffer{Max: tc.max}
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			got, truncated := b.Tail()
			if got != tc.want || truncated != tc.wantTruncated {
				t.Errorf("Tail = %q %v, want %q %v", got, truncated, tc.want, tc.wantTruncated)
			}
		})
	}
}

func TestRetentionExpired(t *testing.T) {
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	at := func(ns, name string, age time.Duration) Stored {
		return Stored{Namespace: ns, Name: name, FinishedAt: now.Add(-age)}
	}
	items := []Stored{at("a", "new", time.Hour), at("a", "old", 8*24*time.Hour), at("b", "mid", 2*24*time.Hour), at("a", "older", 9*24*time.Hour)}
	cases := []struct {
		name string
		r    Retention
		want []string
	}{
		{"by age", Retention{MaxAge: 7 * 24 * time.Hour}, []string{"older", "old"}},
		{"by count, oldest first", Retention{MaxCount: 1}, []string{"older", "old", "mid"}},
		{"age then count", Retention{MaxAge: 7 * 24 * time.Hour, MaxCount: 1}, []string{"older", "old", "mid"}},
		{"within both", Retention{MaxAge: 30 * 24 * time.Hour, MaxCount: 10}, nil},
		{"unbounded", Retention{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range tc.r.Expired(items, now) {
				got = append(got, s.Name)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("expired = %v, want %v", got, tc.want)
			}
		})
	}
	if items[0].Name != "new" {
		t.Error("Expired reordered its input")
	}
}

func TestLastLines(t *testing.T) {
	if got := LastLines("a\nb\nc\n", 2); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Errorf("LastLines = %q", got)
	}
	if got := LastLines("", 2); got != nil {
		t.Errorf("LastLines of nothing = %q", got)
	}
}
