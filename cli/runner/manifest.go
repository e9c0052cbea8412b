// Package runner submits a manifest of Jobs, JobSets and the objects they
// reference to a control plane, follows them to the end while streaming pod
// logs and progress, and turns their final state into a summary and an exit
// code. It is the engine of `batchlet run` and talks to the API only through
// client-go.
package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Object kinds the runner follows to completion.
var (
	JobGVK    = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	JobSetGVK = schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	// PodGVK: a bare Pod runs until its phase is Succeeded or Failed.
	PodGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
)

// ParseManifest splits a YAML or JSON stream of one or more documents into
// objects. Empty documents are skipped; a List is flattened.
func ParseManifest(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(r), 4096)
	var objs []*unstructured.Unstructured
	for i := 0; ; i++ {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if len(raw) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: raw}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("document %d: %w", i+1, err)
			}
			for j := range list.Items {
				objs = append(objs, &list.Items[j])
			}
			continue
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("document %d: Object 'Kind' is missing in '%s'", i+1, bytes.TrimSpace(mustJSON(raw)))
		}
		objs = append(objs, u)
	}
	if len(objs) == 0 {
		return nil, errors.New("no objects passed to run")
	}
	return objs, nil
}

func mustJSON(v map[string]any) []byte {
	b, err := (&unstructured.Unstructured{Object: v}).MarshalJSON()
	if err != nil {
		return []byte("{}")
	}
	return b
}
