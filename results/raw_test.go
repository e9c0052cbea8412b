package results

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kjson "sigs.k8s.io/json"
)

// decodedJSON builds exactly the object a strict decode of the JSON body
// gives: the oracle is encodeJSON (itself checked against encoding/json)
// decoded as the API server decodes a custom resource.
func TestDecodedJSONMatchesStrictDecode(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 11, 26, 16, 0, 0, 123456789, time.FixedZone("x", 3600)))
	full := func() *ContainerResult {
		return &ContainerResult{
			TypeMeta: metav1.TypeMeta{APIVersion: GV.String(), Kind: Kind},
			ObjectMeta: metav1.ObjectMeta{Name: "p-0-abc.main.0", Namespace: "ns",
				Labels: map[string]string{"job-name": "p", "batch.kubernetes.io/job-completion-index": "0"}},
			Spec: ContainerResultSpec{PodName: "p-0-abc", PodUID: "uid-1", NodeName: "node", JobName: "p", JobUID: "juid",
				CompletionIndex: ptr.To[int32](0), JobSetName: "js", ContainerName: "main", InitContainer: true,
				Attempt: 2, ExitCode: -1, Signal: 9, Reason: "Error", Message: "killed", StartedAt: started,
				FinishedAt: metav1.NewTime(started.Add(time.Second)), LogTail: "line 1\nline 2\n", LogTruncated: true},
		}
	}
	tests := []struct {
		name  string
		edit  func(r *ContainerResult)
		plain bool
	}{
		{name: "everything set", plain: true},
		{name: "zero value", edit: func(r *ContainerResult) { *r = ContainerResult{} }, plain: true},
		{name: "minimal", plain: true, edit: func(r *ContainerResult) {
			*r = ContainerResult{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "ns", Labels: map[string]string{}},
				Spec: ContainerResultSpec{PodName: "p", PodUID: "u", ContainerName: "c"}}
		}},
		{name: "escapes and invalid UTF-8", plain: true, edit: func(r *ContainerResult) {
			r.Spec.Message = "<a href=\"x\">&</a>\t\\ \u2028\u2029 é"
			r.Spec.LogTail = "bad utf8 \xff\xfe end\x00\x1f \xe2\x82"
			r.Labels["k"] = "v<>\xff"
		}},
		{name: "negative index, zero times", plain: true, edit: func(r *ContainerResult) {
			r.Spec.CompletionIndex = ptr.To[int32](-5)
			r.Spec.StartedAt, r.Spec.FinishedAt = metav1.Time{}, metav1.Time{}
		}},
		{name: "label keys that encode alike", edit: func(r *ContainerResult) {
			r.Labels["k\xff"], r.Labels["k\xfe"] = "a", "b"
		}},
		{name: "annotations", edit: func(r *ContainerResult) { r.Annotations = map[string]string{"x": "y"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := full()
			if tt.edit != nil {
				tt.edit(r)
			}
			got, ok := decodedJSON(r)
			if ok != tt.plain {
				t.Fatalf("decodedJSON ok = %v, want %v", ok, tt.plain)
			}
			if !ok {
				return
			}
			body, err := encodeJSON(r)
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]interface{}
			strictErrs, err := kjson.UnmarshalStrict(body, &want)
			if err != nil || len(strictErrs) > 0 {
				t.Fatalf("decode %s: %v %v", body, err, strictErrs)
			}
			if !reflect.DeepEqual(got, want) {
				gotJSON, _ := json.Marshal(got)
				t.Fatalf("decodedJSON =\n%s\n%#v\nwant (decoded from the body)\n%s\n%#v", gotJSON, got, body, want)
			}
		})
	}
}

// The raw writer hands plain results over as objects and others as JSON;
// an existing result is no error either way.
func TestRawPostWriter(t *testing.T) {
	var raws, bodies int
	w := NewRawPostWriter(func(_ context.Context, ns string, raw map[string]interface{}) error {
		raws++
		if ns != "ns" || raw["kind"] != Kind || raw["apiVersion"] != GV.String() {
			t.Errorf("raw post in %q of %v", ns, raw)
		}
		return apierrors.NewAlreadyExists(GVR.GroupResource(), "n")
	}, func(_ context.Context, ns string, body []byte) error {
		bodies++
		return nil
	})
	r := &ContainerResult{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "ns"}}
	if err := w.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	r.Annotations = map[string]string{"a": "b"}
	if err := w.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if raws != 1 || bodies != 1 {
		t.Fatalf("%d raw and %d JSON posts, want 1 and 1", raws, bodies)
	}
	failing := NewRawPostWriter(func(context.Context, string, map[string]interface{}) error { return errors.New("boom") }, nil)
	if err := failing.Create(context.Background(), &ContainerResult{}); err == nil {
		t.Fatal("a failed post is no error")
	}
}
