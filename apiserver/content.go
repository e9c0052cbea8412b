package apiserver

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/batchlet/batchlet/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// outputFormat is what the client asked the response to be.
type outputFormat int

const (
	formatObject outputFormat = iota
	formatTable
	formatMetadata
)

// negotiate reads the Accept header. It returns an error for media types we
// cannot produce (protobuf only, for example).
func negotiate(r *http.Request) (outputFormat, error) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return formatObject, nil
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
			return formatObject, nil
		case "Table":
			if params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
				return formatTable, nil
			}
		case "PartialObjectMetadata", "PartialObjectMetadataList":
			if params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
				return formatMetadata, nil
			}
		}
	}
	return formatObject, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", schema.GroupResource{}, "", "only the following media types are accepted: application/json, application/yaml", 0, false)
}

// wantsProtobuf reports whether the client prefers Kubernetes' protobuf
// encoding for a single object (client-go's typed clients configured for
// it, like the embedded control plane's, send it first in Accept).
func wantsProtobuf(r *http.Request) bool {
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

// writeProtobuf answers with obj in the protobuf envelope, if its kind has
// a protobuf form (built-in kinds do, custom resources do not); false
// means nothing was written.
func (s *Server) writeProtobuf(w http.ResponseWriter, code int, obj runtime.Object) bool {
	if _, ok := obj.(interface{ Marshal() ([]byte, error) }); !ok || obj.GetObjectKind().GroupVersionKind().Empty() {
		return false
	}
	var enc encodedBody
	if err := s.protobuf.Encode(obj, &enc); err != nil {
		return false
	}
	w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
	w.WriteHeader(code)
	writeOwned(w, enc.data)
	return true
}

// encodedBody receives the protobuf serializer's output, which it writes
// at once from a buffer of its own making: kept as is, not copied.
type encodedBody struct{ data []byte }

func (e *encodedBody) Write(b []byte) (int, error) {
	if e.data == nil {
		e.data = b
		return len(b), nil
	}
	e.data = append(e.data, b...)
	return len(b), nil
}

// writeOwned writes a whole answer that nothing else refers to: the
// in-process transport's buffer takes it without copying it.
func writeOwned(w http.ResponseWriter, b []byte) {
	for {
		switch t := w.(type) {
		case *statusRecorder:
			w = t.ResponseWriter
			continue
		case *bufferedResponseWriter:
			if t.adopt(b) {
				return
			}
		}
		break
	}
	_, _ = w.Write(b)
}

// readBody reads the request body within the configured limit.
func (s *Server) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	limit := s.cfg.MaxRequestBodyBytes
	if r.ContentLength > limit {
		return nil, errTooLarge(limit)
	}
	data, err := readAllSized(io.LimitReader(r.Body, limit+1), r.ContentLength)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("read request body: %v", err))
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge(limit)
	}
	return data, nil
}

// readAllSized is io.ReadAll for a body of a known length (n, -1 when
// unknown): one buffer of the right size instead of a growing one.
func readAllSized(r io.Reader, n int64) ([]byte, error) {
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

// toJSON converts a YAML body to JSON when the content type says YAML.
func toJSON(r *http.Request, data []byte) ([]byte, error) {
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

// decodeBody decodes a request body into the resource's type, checking its
// apiVersion and kind against gvk, and honouring fieldValidation. Warnings
// are added to the response headers.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, gvk schema.GroupVersionKind, into runtime.Object) error {
	data, err := s.readBody(r)
	if err != nil {
		return err
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == runtime.ContentTypeProtobuf {
		return s.decodeProtobuf(data, gvk, into)
	}
	if data, err = toJSON(r, data); err != nil {
		return err
	}
	return s.decodeJSON(w, r, data, gvk, into)
}

// decodeProtobuf decodes the protobuf envelope client-go's typed clients
// send for built-in kinds.
func (s *Server) decodeProtobuf(data []byte, gvk schema.GroupVersionKind, into runtime.Object) error {
	def := gvk
	_, got, err := s.protobuf.Decode(data, &def, into)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
	}
	if got != nil && !got.Empty() && *got != gvk {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s", got.Kind, got.Version, gvk.Kind))
	}
	into.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, data []byte, gvk schema.GroupVersionKind, into runtime.Object) error {
	if s.decodeJSONOnePass(data, gvk, into) {
		return nil
	}
	if ok, err := s.decodeCustomResourceOnePass(w, r, data, gvk, into); ok || err != nil {
		return err
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
	}
	if tm.APIVersion != "" && tm.APIVersion != gvk.GroupVersion().String() {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", tm.APIVersion, gvk.GroupVersion().String()))
	}
	if tm.Kind != "" && tm.Kind != gvk.Kind {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: the object kind %q does not match the expected kind %q", tm.Kind, gvk.Version, gvk.Kind, tm.Kind, gvk.Kind))
	}
	validation := r.URL.Query().Get("fieldValidation")
	if res := s.resourceForKind(gvk); res != nil && (res.DefaultRaw != nil || res.PruneRaw != nil) {
		var raw map[string]interface{}
		if err := json.Unmarshal(data, &raw); err == nil && raw != nil {
			if err := pruneRaw(w, res, raw, validation); err != nil {
				return err
			}
			if res.DefaultRaw != nil {
				res.DefaultRaw(raw)
			}
			if d, err := json.Marshal(raw); err == nil {
				data = d
			}
		}
	}
	ser := sjson.NewSerializerWithOptions(sjson.DefaultMetaFactory, s.scheme, s.scheme, sjson.SerializerOptions{Strict: validation != "Ignore"})
	def := gvk
	_, _, err := ser.Decode(data, &def, into)
	if err != nil {
		if !runtime.IsStrictDecodingError(err) {
			return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
		}
		if validation == "Strict" {
			return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
		}
		if se, ok := runtime.AsStrictDecodingError(err); ok {
			for _, e := range se.Errors() {
				w.Header().Add("Warning", fmt.Sprintf("299 - %q", e))
			}
		}
	}
	into.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// pruneRaw drops the fields a custom resource's schema does not declare:
// with fieldValidation=Strict they are an error, with Ignore silent, and
// otherwise a warning each, in upstream's words.
func pruneRaw(w http.ResponseWriter, res *registry.Resource, raw map[string]interface{}, validation string) error {
	if res.PruneRaw == nil {
		return nil
	}
	paths := res.PruneRaw(raw)
	if len(paths) == 0 || validation == "Ignore" {
		return nil
	}
	errs := make([]error, 0, len(paths))
	for _, p := range paths {
		errs = append(errs, fmt.Errorf("unknown field %q", p))
	}
	if validation == "Strict" {
		gvk := res.GVK()
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, runtime.NewStrictDecodingError(errs)))
	}
	for _, e := range errs {
		w.Header().Add("Warning", fmt.Sprintf("299 - %q", e.Error()))
	}
	return nil
}

// decodeJSONOnePass decodes a body that needs no raw defaulting in a single
// strict pass, checking apiVersion and kind from the decoded object. It
// reports false (into then holds a partial decode of data) when anything is
// off — a decode error, strict errors, another apiVersion or kind — and
// decodeJSON's full path then gives the exact error or warnings.
func (s *Server) decodeJSONOnePass(data []byte, gvk schema.GroupVersionKind, into runtime.Object) bool {
	if res := s.resourceForKind(gvk); res == nil || res.DefaultRaw != nil {
		return false
	}
	tm, ok := into.GetObjectKind().(*metav1.TypeMeta)
	if !ok {
		return false
	}
	strictErrs, err := kjson.UnmarshalStrict(data, into)
	if err != nil || len(strictErrs) > 0 {
		return false
	}
	if (tm.APIVersion != "" && tm.APIVersion != gvk.GroupVersion().String()) || (tm.Kind != "" && tm.Kind != gvk.Kind) {
		return false
	}
	into.GetObjectKind().SetGroupVersionKind(gvk)
	return true
}

// decodeCustomResourceOnePass decodes a custom resource that names its
// apiVersion and kind and has no duplicate fields with one strict decode
// into the map the object keeps, then prunes and defaults it in place
// (the general path decodes it three times and encodes it once). It
// reports false, with nothing written, for anything else, which the
// general path then answers with upstream's messages and warnings.
func (s *Server) decodeCustomResourceOnePass(w http.ResponseWriter, r *http.Request, data []byte, gvk schema.GroupVersionKind, into runtime.Object) (bool, error) {
	u, ok := into.(*unstructured.Unstructured)
	res := s.resourceForKind(gvk)
	if !ok || res == nil || !res.CustomResource {
		return false, nil
	}
	var raw map[string]interface{}
	strictErrs, err := kjson.UnmarshalStrict(data, &raw)
	if err != nil || len(strictErrs) > 0 || raw == nil {
		return false, nil
	}
	if apiVersion, _ := raw["apiVersion"].(string); apiVersion != gvk.GroupVersion().String() {
		return false, nil
	}
	if kind, _ := raw["kind"].(string); kind != gvk.Kind {
		return false, nil
	}
	if err := pruneRaw(w, res, raw, r.URL.Query().Get("fieldValidation")); err != nil {
		return true, err
	}
	if res.DefaultRaw != nil {
		res.DefaultRaw(raw)
	}
	u.Object = raw
	u.SetGroupVersionKind(gvk)
	return true, nil
}

// writeObject answers with obj in the negotiated format.
func (s *Server) writeObject(w http.ResponseWriter, r *http.Request, res *registry.Resource, code int, obj runtime.Object) {
	if wantsProtobuf(r) && s.writeProtobuf(w, code, obj) {
		return
	}
	format, err := negotiate(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	var out interface{} = obj
	switch format {
	case formatTable:
		if res != nil && res.GVK() == obj.GetObjectKind().GroupVersionKind() {
			out = s.table(r, res, []runtime.Object{obj}, metav1.ListMeta{ResourceVersion: accessor(obj).GetResourceVersion()})
		}
	case formatMetadata:
		if res != nil && res.GVK() == obj.GetObjectKind().GroupVersionKind() {
			out = partialMetadata(obj)
		}
	}
	writeJSON(w, code, out)
}

func partialMetadata(obj runtime.Object) *metav1.PartialObjectMetadata {
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

// decodeLoose decodes an options-like body (DeleteOptions, Eviction) in any
// supported media type without checking its apiVersion.
func (s *Server) decodeLoose(r *http.Request, data []byte, into runtime.Object) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == runtime.ContentTypeProtobuf {
		if _, _, err := s.protobuf.Decode(data, nil, into); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("decode %T: %v", into, err))
		}
		return nil
	}
	data, err := toJSON(r, data)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("decode %T: %v", into, err))
	}
	return nil
}
