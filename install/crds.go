package install

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// crdFiles are the generated CustomResourceDefinitions, one per file.
//
//go:embed crds/*.yaml
var crdFiles embed.FS

// CRDYAML returns the CustomResourceDefinitions as one multi-document YAML
// stream, as `batchlet crds` prints it.
func CRDYAML() ([]byte, error) {
	names, err := crdFileNames()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, name := range names {
		data, err := crdFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		if out.Len() > 0 {
			out.WriteString("---\n")
		}
		out.Write(data)
	}
	return out.Bytes(), nil
}

// CRDs returns the CustomResourceDefinitions as objects to apply.
func CRDs() ([]*unstructured.Unstructured, error) {
	data, err := CRDYAML()
	if err != nil {
		return nil, err
	}
	return decodeYAMLObjects(data)
}

func crdFileNames() ([]string, error) {
	names, err := fs.Glob(crdFiles, "crds/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("listing embedded CRDs: %w", err)
	}
	sort.Strings(names)
	return names, nil
}

// decodeYAMLObjects splits a multi-document YAML stream into objects,
// skipping empty documents.
func decodeYAMLObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if err == io.EOF {
				return objs, nil
			}
			return nil, fmt.Errorf("decoding YAML document %d: %w", len(objs)+1, err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
