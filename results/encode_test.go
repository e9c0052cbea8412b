package results

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// encodeJSON writes exactly what json.Marshal writes, on the hand-written
// path and on the fallback.
func TestEncodeJSONMatchesEncodingJSON(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 11, 26, 16, 0, 0, 123456789, time.FixedZone("x", 3600)))
	finished := metav1.NewTime(started.Add(1500 * time.Millisecond))
	full := func() *ContainerResult {
		return &ContainerResult{
			TypeMeta: metav1.TypeMeta{APIVersion: GV.String(), Kind: Kind},
			ObjectMeta: metav1.ObjectMeta{Name: "p-0-abc.main.0", Namespace: "ns",
				Labels: map[string]string{"job-name": "p", "batch.kubernetes.io/job-completion-index": "0", "a": "b"}},
			Spec: ContainerResultSpec{PodName: "p-0-abc", PodUID: "uid-1", NodeName: "node", JobName: "p", JobUID: "juid",
				CompletionIndex: ptr.To[int32](0), JobSetName: "js", ContainerName: "main", InitContainer: true,
				Attempt: 2, ExitCode: -1, Signal: 9, Reason: "Error", Message: "killed", StartedAt: started, FinishedAt: finished,
				LogTail: "line 1\nline 2\n", LogTruncated: true},
		}
	}
	tests := []struct {
		name string
		edit func(r *ContainerResult)
	}{
		{name: "everything set"},
		{name: "zero value", edit: func(r *ContainerResult) { *r = ContainerResult{} }},
		{name: "minimal", edit: func(r *ContainerResult) {
			*r = ContainerResult{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "ns", Labels: map[string]string{}},
				Spec: ContainerResultSpec{PodName: "p", PodUID: "u", ContainerName: "c"}}
		}},
		{name: "escapes", edit: func(r *ContainerResult) {
			r.Spec.Message = "<a href=\"x\">&</a>\t\\ \u2028\u2029 é"
			r.Spec.LogTail = "bad utf8 \xff\xfe end\x00\x1f"
			r.Labels["k"] = "v<>"
		}},
		{name: "negative index and zero times", edit: func(r *ContainerResult) {
			r.Spec.CompletionIndex = ptr.To[int32](-5)
			r.Spec.StartedAt, r.Spec.FinishedAt = metav1.Time{}, metav1.Time{}
		}},
		{name: "annotations fall back", edit: func(r *ContainerResult) { r.Annotations = map[string]string{"x": "y"} }},
		{name: "owner falls back", edit: func(r *ContainerResult) {
			r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u"}}
		}},
		{name: "uid and creation falls back", edit: func(r *ContainerResult) { r.UID, r.CreationTimestamp = "u", started }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := full()
			if tt.edit != nil {
				tt.edit(r)
			}
			want, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeJSON(r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("encodeJSON =\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// A result built by New takes the hand-written path.
func TestNewResultIsPlain(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"job-name": "j"}}}
	if r := New(pod, Attempt{Container: "c", State: &corev1.ContainerStateTerminated{ExitCode: 1}}, "", false); !plainMeta(&r.ObjectMeta) {
		t.Fatalf("New's metadata %+v is not plain", r.ObjectMeta)
	}
}

func BenchmarkEncodeResult(b *testing.B) {
	started := metav1.NewTime(time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC))
	r := &ContainerResult{
		TypeMeta: metav1.TypeMeta{APIVersion: GV.String(), Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "bench-17-x.main.0", Namespace: "default",
			Labels: map[string]string{"job-name": "bench", "batch.kubernetes.io/job-name": "bench", "batch.kubernetes.io/job-completion-index": "17"}},
		Spec: ContainerResultSpec{PodName: "bench-17-x", PodUID: "0f0e7b8a-3c2d-4e5f-8a9b-0c1d2e3f4a5b", NodeName: "node", JobName: "bench",
			JobUID: "1a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d", CompletionIndex: ptr.To[int32](17), ContainerName: "main",
			Reason: "Completed", StartedAt: started, FinishedAt: started},
	}
	for _, tc := range []struct {
		name string
		enc  func(*ContainerResult) ([]byte, error)
	}{
		{"encoding-json", func(r *ContainerResult) ([]byte, error) { return json.Marshal(r) }},
		{"encodeJSON", encodeJSON},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.enc(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
