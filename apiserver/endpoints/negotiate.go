package endpoints

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// OutputFormat is what the client asked the response to be.
type OutputFormat int

const (
	FormatObject OutputFormat = iota
	FormatTable
	FormatMetadata
)

// Negotiate reads the Accept header. It returns an error for media types we
// cannot produce (protobuf only, for example).
func Negotiate(r *http.Request) (OutputFormat, error) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return FormatObject, nil
	}
	for _, clause := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(clause))
		if err != nil {
			continue
		}
		if mt != "application/json" && mt != "*/*" && mt != "application/*" && mt != "application/yaml" {
			continue
		}
		switch params["as"] {
		case "":
			return FormatObject, nil
		case "Table":
			if params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
				return FormatTable, nil
			}
		case "PartialObjectMetadata", "PartialObjectMetadataList":
			if params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
				return FormatMetadata, nil
			}
		}
	}
	return FormatObject, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", schema.GroupResource{}, "", "only the following media types are accepted: application/json, application/yaml", 0, false)
}

// WantsProtobuf reports whether the client prefers Kubernetes' protobuf
// encoding for a single object (client-go's typed clients configured for
// it, like the embedded control plane's, send it first in Accept).
func WantsProtobuf(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	if accept == runtime.ContentTypeProtobuf || strings.HasPrefix(accept, runtime.ContentTypeProtobuf+",") {
		return true // what the in-process clients send: no parsing per request
	}
	for _, clause := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(clause))
		if err != nil {
			continue
		}
		if mt == runtime.ContentTypeProtobuf {
			return params["as"] == ""
		}
		if mt == "application/json" || mt == "*/*" || mt == "application/*" || mt == "application/yaml" {
			return false
		}
	}
	return false
}

// ReadAllSized is io.ReadAll for a body of a known length (n, -1 when
// unknown): one buffer of the right size instead of a growing one.
func ReadAllSized(r io.Reader, n int64) ([]byte, error) {
	if n <= 0 {
		return io.ReadAll(r)
	}
	buf := make([]byte, n+1) // +1: a body longer than announced shows
	read := 0
	for read < len(buf) {
		m, err := r.Read(buf[read:])
		read += m
		if err == io.EOF {
			return buf[:read], nil
		}
		if err != nil {
			return nil, err
		}
	}
	rest, err := io.ReadAll(r)
	return append(buf, rest...), err
}

// ToJSON converts a YAML body to JSON when the content type says YAML.
func ToJSON(r *http.Request, data []byte) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "", "application/json", "*/*":
		return data, nil
	case "application/yaml", "application/x-yaml", "text/yaml":
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error converting YAML to JSON: %v", err))
		}
		return j, nil
	}
	return nil, errUnsupportedMedia(mt)
}

func PartialMetadata(obj runtime.Object) *metav1.PartialObjectMetadata {
	pm := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}}
	// Typed objects are their own metav1.Object; reach the embedded
	// ObjectMeta through ObjectMetaAccessor so nothing is lost.
	if oma, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if om, ok := oma.GetObjectMeta().(*metav1.ObjectMeta); ok {
			pm.ObjectMeta = *om
		}
	} else if u, ok := obj.(runtime.Unstructured); ok {
		// Custom resources: the metadata map converted.
		if md, ok := u.UnstructuredContent()["metadata"].(map[string]interface{}); ok {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(md, &pm.ObjectMeta)
		}
	}
	return pm
}
