package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const metadataListAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

// A metadata list of custom resources, which reads each item's metadata
// alone, answers what the full list's items' metadata are, with
// selectors and across pages, over HTTP and in-process.
func TestMetadataListOfCustomResources(t *testing.T) {
	e := newTestEnv(t)
	const path = "/apis/results.batchlet.dev/v1/namespaces/default/containerresults"
	for i, job := range []string{"pi", "pi", "pi", "other", "other"} {
		_, body := resultBody(t, fmt.Sprintf("%s-%d-abcde", job, i), job, fmt.Sprint(i%2), int32(i))
		if code, data := e.do(t, http.MethodPost, path, "", "application/json", body, testToken); code != http.StatusCreated {
			t.Fatalf("create: %d %s", code, data)
		}
	}
	for name, query := range map[string]url.Values{
		"all":              {},
		"label selector":   {"labelSelector": {"batch.kubernetes.io/job-completion-index=1"}},
		"field selector":   {"fieldSelector": {"spec.jobName=pi"}},
		"name selector":    {"fieldSelector": {"metadata.name!=pi-0-abcde.main.0"}},
		"pages":            {"limit": {"2"}},
		"pages and select": {"limit": {"1"}, "labelSelector": {"batch.kubernetes.io/job-completion-index=0"}},
	} {
		t.Run(name, func(t *testing.T) {
			pages := 0
			for {
				want := fullListMetadata(t, e, path+"?"+query.Encode())
				code, data := e.do(t, http.MethodGet, path+"?"+query.Encode(), metadataListAccept, "", nil, testToken)
				var got metav1.PartialObjectMetadataList
				if err := json.Unmarshal(data, &got); code != http.StatusOK || err != nil {
					t.Fatalf("metadata list: %d %s %v", code, data, err)
				}
				if got.Kind != "PartialObjectMetadataList" || len(got.Items) == 0 || !reflect.DeepEqual(got.ListMeta, want.ListMeta) || !reflect.DeepEqual(got.Items, want.Items) {
					t.Fatalf("metadata list\n%+v\nwant\n%+v", got, want)
				}
				if pages++; got.Continue == "" {
					break
				}
				query.Set("continue", got.Continue)
			}
			if query.Get("limit") != "" && pages < 2 {
				t.Fatalf("%d pages, want several", pages)
			}
		})
	}

	// In-process: the metadata informers' list against the full one's.
	gvr := schema.GroupVersionResource{Group: "results.batchlet.dev", Version: "v1", Resource: "containerresults"}
	lists := map[bool][]metav1.ObjectMeta{}
	for _, metadataOnly := range []bool{false, true} {
		lw, err := e.srv.LocalListerWatcher(gvr, "", metadataOnly, nil)
		if err != nil {
			t.Fatal(err)
		}
		list, err := lw.ListWithContext(e.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		switch l := list.(type) {
		case *metav1.PartialObjectMetadataList:
			for _, it := range l.Items {
				lists[metadataOnly] = append(lists[metadataOnly], it.ObjectMeta)
			}
		case *unstructured.UnstructuredList:
			for _, it := range l.Items {
				lists[metadataOnly] = append(lists[metadataOnly], objectMetaOf(t, it.Object["metadata"]))
			}
		default:
			t.Fatalf("in-process list is a %T", list)
		}
	}
	if len(lists[true]) != 5 || !reflect.DeepEqual(lists[true], lists[false]) {
		t.Fatalf("in-process metadata list\n%+v\nwant\n%+v", lists[true], lists[false])
	}
}

// fullListMetadata is the JSON list at path as a metadata list: its list
// metadata and its items' metadata.
func fullListMetadata(t *testing.T, e *testEnv, path string) metav1.PartialObjectMetadataList {
	t.Helper()
	code, data := e.do(t, http.MethodGet, path, "application/json", "", nil, testToken)
	var full struct {
		Metadata metav1.ListMeta `json:"metadata"`
		Items    []struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(data, &full); code != http.StatusOK || err != nil {
		t.Fatalf("full list: %d %s %v", code, data, err)
	}
	want := metav1.PartialObjectMetadataList{ListMeta: full.Metadata}
	for _, it := range full.Items {
		want.Items = append(want.Items, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: it.Metadata})
	}
	return want
}

func objectMetaOf(t *testing.T, md any) metav1.ObjectMeta {
	t.Helper()
	data, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	var om metav1.ObjectMeta
	if err := json.Unmarshal(data, &om); err != nil {
		t.Fatal(err)
	}
	om.ManagedFields = nil // in-process informers' objects have none
	return om
}
