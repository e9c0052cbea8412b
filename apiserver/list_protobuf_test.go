package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

// TestProtobufListMatchesSerializer lists pods and Jobs in protobuf, whose
// items are the stored bytes with their resourceVersion spliced in, and
// checks each answer against the protobuf serializer's encoding of the
// same list (byte for byte) and against the JSON answer to the same
// request (the same objects and list metadata), with and without
// selectors, in pages, and at an older exact revision, with the cache of
// encoded items empty, holding older versions, and holding these.
func TestProtobufListMatchesSerializer(t *testing.T) {
	for _, store := range []string{"memory", "bolt"} {
		t.Run(store, func(t *testing.T) {
			if store == "bolt" {
				overBolt(t)
			}
			e := newTestEnv(t)
			pods := e.client.CoreV1().Pods("default")
			for i := range 12 {
				p := testPod(fmt.Sprintf("p-%02d", i), "")
				p.Labels["group"] = strconv.Itoa(i % 3)
				if i%2 == 0 {
					p.Annotations = map[string]string{"note": "ünïcode " + strings128(i)}
					p.GenerateName = "p-"
					p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: types.UID(fmt.Sprintf("uid-%d", i))}}
				}
				if _, err := pods.Create(e.ctx, p, metav1.CreateOptions{FieldManager: "test"}); err != nil {
					t.Fatal(err)
				}
			}
			old := listJSON[corev1.PodList](t, e, "/api/v1/namespaces/default/pods", nil).ResourceVersion
			// The cache of encoded items now holds the versions at old,
			// which the patches below make stale.
			checkProtobufPages[corev1.PodList](t, e, "/api/v1/namespaces/default/pods", url.Values{})
			for i := 0; i < 12; i += 5 { // newer versions: other revisions, longer resourceVersions
				if _, err := pods.Patch(e.ctx, fmt.Sprintf("p-%02d", i), types.MergePatchType, []byte(`{"metadata":{"labels":{"group":"9"}}}`), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.client.BatchV1().Jobs("default").Create(e.ctx, testJob("j"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			queries := []url.Values{
				{},
				{"labelSelector": {"group=1"}},
				{"labelSelector": {"group!=2"}, "fieldSelector": {"metadata.name!=p-05"}},
				{"limit": {"5"}},
				{"limit": {"4"}, "labelSelector": {"group in (0,9)"}},
				{"resourceVersion": {"0"}},
			}
			if store == "bolt" { // the memory backend keeps no history
				queries = append(queries, url.Values{"resourceVersion": {old}, "resourceVersionMatch": {"Exact"}})
			}
			for range 2 { // the second time from the cache of encoded items
				for _, q := range queries {
					checkProtobufPages[corev1.PodList](t, e, "/api/v1/namespaces/default/pods", q)
					checkProtobufPages[corev1.PodList](t, e, "/api/v1/pods", q)
				}
			}
			checkProtobufPages[batchv1.JobList](t, e, "/apis/batch/v1/jobs", url.Values{})
		})
	}
}

// strings128 is a string long enough (over 127 bytes with the rest) for
// the annotations' length to take two varint bytes.
func strings128(i int) string { return string(bytes.Repeat([]byte{'a' + byte(i)}, 130)) }

// checkProtobufPages lists path with q in protobuf and in JSON, following
// continue tokens, and compares each page.
func checkProtobufPages[L any, PL interface {
	*L
	runtime.Object
}](t *testing.T, e *testEnv, path string, q url.Values) {
	t.Helper()
	ser := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	for page := 0; ; page++ {
		body, ctype := get(t, e, path+"?"+q.Encode(), runtime.ContentTypeProtobuf+",application/json")
		if ctype != runtime.ContentTypeProtobuf {
			t.Fatalf("%s?%s: Content-Type %q", path, q.Encode(), ctype)
		}
		var fromPB PL = new(L)
		if _, _, err := ser.Decode(body, nil, fromPB); err != nil {
			t.Fatalf("%s?%s page %d: decode protobuf: %v", path, q.Encode(), page, err)
		}
		var again bytes.Buffer
		if err := ser.Encode(fromPB, &again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Bytes(), body) {
			t.Fatalf("%s?%s page %d: protobuf answer differs from the serializer's encoding of it\n got %q\nwant %q", path, q.Encode(), page, body, again.Bytes())
		}
		fromJSON := listJSON[L, PL](t, e, path, q)
		fromPB.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // compared by the serializer above
		fromJSON.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		pbJSON, _ := json.Marshal(fromPB)
		jsJSON, _ := json.Marshal(fromJSON)
		if !bytes.Equal(pbJSON, jsJSON) {
			t.Fatalf("%s?%s page %d: protobuf and JSON answers differ\n pb %s\njson %s", path, q.Encode(), page, pbJSON, jsJSON)
		}
		lm := any(fromPB).(metav1.ListInterface)
		if lm.GetContinue() == "" {
			return
		}
		q = cloneValues(q)
		q.Set("continue", lm.GetContinue())
		q.Del("resourceVersion")
		q.Del("resourceVersionMatch")
	}
}

func cloneValues(q url.Values) url.Values {
	c := url.Values{}
	for k, v := range q {
		c[k] = append([]string(nil), v...)
	}
	return c
}

func listJSON[L any, PL interface {
	*L
	runtime.Object
}](t *testing.T, e *testEnv, path string, q url.Values) PL {
	t.Helper()
	body, _ := get(t, e, path+"?"+q.Encode(), "application/json")
	var l PL = new(L)
	if err := json.Unmarshal(body, l); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return l
}

// get returns the body and Content-Type of a GET of path with accept.
func get(t *testing.T, e *testEnv, path, accept string) ([]byte, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.http.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", path, resp.StatusCode, err, body)
	}
	return body, resp.Header.Get("Content-Type")
}
