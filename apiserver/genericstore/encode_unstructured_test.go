package genericstore

import (
	"bytes"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestEncodeStorageOfUnstructuredIsJSONMarshalOfIt: a custom resource's
// stored bytes are those json.Marshal of the *Unstructured gave before
// encodeStorage marshalled its map directly, whatever the map holds
// (characters json escapes, nested lists and maps, the number kinds a
// decode makes, nulls).
func TestEncodeStorageOfUnstructuredIsJSONMarshalOfIt(t *testing.T) {
	for name, obj := range map[string]map[string]interface{}{
		"nil map": nil,
		"empty":   {},
		"result": {
			"apiVersion": "results.batchlet.dev/v1", "kind": "ContainerResult",
			"metadata": map[string]interface{}{"name": "r-1", "namespace": "default",
				"labels":          map[string]interface{}{"batch.kubernetes.io/job-name": "j"},
				"ownerReferences": []interface{}{map[string]interface{}{"uid": "u", "controller": true}}},
			"spec": map[string]interface{}{"exitCode": int64(137), "ratio": 0.25, "big": 1e21, "small": 1e-7, "none": nil},
		},
		"escaped":    {"html": "<a href=\"x\">&</a>", "seps": "a\u2028b\u2029c", "ctl": "\x00\t\n\x1f", "bad utf8": "\xff\xfe", "unicode": "é 日本"},
		"keys order": {"b": 1, "a": []interface{}{int64(1), "x", false, nil, []interface{}{}}, "<k>": map[string]interface{}{}},
	} {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: obj}
			want, err := json.Marshal(u)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeStorage(u)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encodeStorage = %s\nwant json.Marshal = %s", got, want)
			}
		})
	}
}
