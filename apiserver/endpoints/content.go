package endpoints

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/batchlet/batchlet/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	kjson "sigs.k8s.io/json"
)

// writeProtobuf answers with obj in the protobuf envelope, if its kind has
// a protobuf form (built-in kinds do, custom resources do not); false
// means nothing was written.
func (c *Codec) writeProtobuf(w http.ResponseWriter, code int, obj runtime.Object) bool {
	if _, ok := obj.(interface{ Marshal() ([]byte, error) }); !ok || obj.GetObjectKind().GroupVersionKind().Empty() {
		return false
	}
	var enc encodedBody
	if err := c.protobuf.Encode(obj, &enc); err != nil {
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

// Adopter is a ResponseWriter that can take a whole body as it is, without
// copying it (the in-process transport's buffer).
type Adopter interface {
	// Adopt makes b, which nothing else refers to, the whole body; false
	// when something was written already.
	Adopt(b []byte) bool
}

// writeOwned writes a whole answer that nothing else refers to: a writer
// that can adopt it (looking through wrappers that Unwrap) takes it
// without copying it.
func writeOwned(w http.ResponseWriter, b []byte) {
	for inner := w; inner != nil; {
		if a, ok := inner.(Adopter); ok {
			if a.Adopt(b) {
				return
			}
			break
		}
		u, ok := inner.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		inner = u.Unwrap()
	}
	_, _ = w.Write(b)
}

// readBody reads the request body within the configured limit.
func (c *Codec) ReadBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	limit := c.maxBody
	if r.ContentLength > limit {
		return nil, ErrTooLarge(limit)
	}
	data, err := ReadAllSized(io.LimitReader(r.Body, limit+1), r.ContentLength)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("read request body: %v", err))
	}
	if int64(len(data)) > limit {
		return nil, ErrTooLarge(limit)
	}
	return data, nil
}

// decodeBody decodes a request body into the resource's type, checking its
// apiVersion and kind against gvk, and honouring fieldValidation. Warnings
// are added to the response headers.
func (c *Codec) DecodeBody(w http.ResponseWriter, r *http.Request, gvk schema.GroupVersionKind, into runtime.Object) error {
	data, err := c.ReadBody(r)
	if err != nil {
		return err
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == runtime.ContentTypeProtobuf {
		return c.decodeProtobuf(data, gvk, into)
	}
	if data, err = ToJSON(r, data); err != nil {
		return err
	}
	return c.DecodeJSON(w, r, data, gvk, into)
}

// decodeProtobuf decodes the protobuf envelope client-go's typed clients
// send for built-in kinds.
func (c *Codec) decodeProtobuf(data []byte, gvk schema.GroupVersionKind, into runtime.Object) error {
	def := gvk
	_, got, err := c.protobuf.Decode(data, &def, into)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
	}
	if got != nil && !got.Empty() && *got != gvk {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s", got.Kind, got.Version, gvk.Kind))
	}
	into.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

func (c *Codec) DecodeJSON(w http.ResponseWriter, r *http.Request, data []byte, gvk schema.GroupVersionKind, into runtime.Object) error {
	if c.decodeJSONOnePass(data, gvk, into) {
		return nil
	}
	if ok, err := c.decodeCustomResourceOnePass(w, r, data, gvk, into); ok || err != nil {
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
	if res := c.resourceForKind(gvk); res != nil && (res.DefaultRaw != nil || res.PruneRaw != nil) {
		var raw map[string]interface{}
		if err := json.Unmarshal(data, &raw); err == nil && raw != nil {
			if err := PruneRaw(w, res, raw, validation); err != nil {
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
	ser := sjson.NewSerializerWithOptions(sjson.DefaultMetaFactory, c.scheme, c.scheme, sjson.SerializerOptions{Strict: validation != "Ignore"})
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

// PruneRaw drops the fields a custom resource's schema does not declare:
// with fieldValidation=Strict they are an error, with Ignore silent, and
// otherwise a warning each, in upstream's words.
func PruneRaw(w http.ResponseWriter, res *registry.Resource, raw map[string]interface{}, validation string) error {
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
func (c *Codec) decodeJSONOnePass(data []byte, gvk schema.GroupVersionKind, into runtime.Object) bool {
	if res := c.resourceForKind(gvk); res == nil || res.DefaultRaw != nil {
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
func (c *Codec) decodeCustomResourceOnePass(w http.ResponseWriter, r *http.Request, data []byte, gvk schema.GroupVersionKind, into runtime.Object) (bool, error) {
	u, ok := into.(*unstructured.Unstructured)
	res := c.resourceForKind(gvk)
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
	if err := PruneRaw(w, res, raw, r.URL.Query().Get("fieldValidation")); err != nil {
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
func (c *Codec) WriteObject(w http.ResponseWriter, r *http.Request, res *registry.Resource, code int, obj runtime.Object) {
	if WantsProtobuf(r) && c.writeProtobuf(w, code, obj) {
		return
	}
	format, err := Negotiate(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	var out interface{} = obj
	switch format {
	case FormatTable:
		if res != nil && res.GVK() == obj.GetObjectKind().GroupVersionKind() {
			out = c.Table(r, res, []runtime.Object{obj}, metav1.ListMeta{ResourceVersion: accessor(obj).GetResourceVersion()})
		}
	case FormatMetadata:
		if res != nil && res.GVK() == obj.GetObjectKind().GroupVersionKind() {
			out = PartialMetadata(obj)
		}
	}
	WriteJSON(w, code, out)
}

// decodeLoose decodes an options-like body (DeleteOptions, Eviction) in any
// supported media type without checking its apiVersion.
func (c *Codec) DecodeLoose(r *http.Request, data []byte, into runtime.Object) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == runtime.ContentTypeProtobuf {
		if _, _, err := c.protobuf.Decode(data, nil, into); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("decode %T: %v", into, err))
		}
		return nil
	}
	data, err := ToJSON(r, data)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("decode %T: %v", into, err))
	}
	return nil
}
