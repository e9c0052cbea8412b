package patch

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/batchlet/batchlet/apiserver/registry"
	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Patch is a PATCH request's body, checked: valid JSON, and for a JSON
// patch its decoded operations.
type Patch struct {
	Type types.PatchType
	Data []byte
	ops  jsonpatch.Patch
}

// Codec is what Apply needs from the server: the served JSON of the current
// object (the server shares it with its watches) and the decoding of the
// patched JSON with the request's field validation (warnings go to the
// client).
type Codec struct {
	CurrentJSON func(cur runtime.Object) ([]byte, error)
	Decode      func(data []byte, into runtime.Object) error
}

// Check answers whether res accepts patches of type pt, with upstream's 415
// when it does not: custom resources and JobSets take no strategic merge
// patch. name is the patched object's, for the error.
func Check(res *registry.Resource, pt types.PatchType, name string) error {
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.ApplyPatchType:
		return nil
	case types.StrategicMergePatchType:
		if res.CustomResource {
			return unsupported(res, name, fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
				types.JSONPatchType, types.MergePatchType, types.ApplyPatchType))
		}
		if res.NoStrategicMerge {
			return unsupported(res, name, "strategic merge patch format is not supported")
		}
		return nil
	}
	return unsupported(res, name, fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s, %s",
		types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyPatchType))
}

func unsupported(res *registry.Resource, name, msg string) error {
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", res.GroupResource(), name, msg, 0, false)
}

// Parse checks a JSON, merge or strategic merge patch body (server-side
// apply bodies go to ParseApply).
func Parse(pt types.PatchType, data []byte) (*Patch, error) {
	if !json.Valid(data) {
		return nil, apierrors.NewBadRequest("error decoding patch: invalid JSON")
	}
	p := &Patch{Type: pt, Data: data}
	if pt == types.JSONPatchType {
		ops, err := jsonpatch.DecodePatch(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		p.ops = ops
	}
	return p, nil
}

// Apply applies p to cur, which it only reads (the result may share cur's
// unpatched parts), and returns a new object of res's type. The result
// keeps no resourceVersion unless the patch sets one other than cur's
// (then it is a precondition): a retry after a concurrent write re-applies
// the patch to the newer object.
func Apply(res *registry.Resource, p *Patch, cur runtime.Object, codec Codec) (runtime.Object, error) {
	if p.Type == types.StrategicMergePatchType {
		if obj, ok := strategicPatchObject(res, cur, p.Data); ok {
			return obj, nil
		}
	}
	orig, err := codec.CurrentJSON(cur)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var patched []byte
	switch p.Type {
	case types.JSONPatchType:
		patched, err = p.ops.Apply(orig)
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(orig, p.Data)
	case types.StrategicMergePatchType:
		patched, err = strategicpatch.StrategicMergePatch(orig, p.Data, res.New())
	default:
		err = fmt.Errorf("unsupported patch type %q", p.Type)
	}
	if err != nil {
		return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", res.GroupResource(), accessor(cur).GetName(), err.Error(), 0, false)
	}
	obj := res.New()
	if err := codec.Decode(patched, obj); err != nil {
		return nil, err
	}
	dropUnchangedVersion(cur, obj)
	return obj, nil
}

// dropUnchangedVersion clears obj's resourceVersion when it is cur's: the
// patch did not set it, so it is no precondition.
func dropUnchangedVersion(cur, obj runtime.Object) {
	m := accessor(obj)
	if m.GetResourceVersion() == accessor(cur).GetResourceVersion() {
		m.SetResourceVersion("")
	}
}

// accessor is obj's metadata; every stored object has some.
func accessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("object %T has no metadata: %v", obj, err))
	}
	return m
}

// strategicPatchObject applies a strategic merge patch to cur's fields
// directly (typed object, the patch's JSON decoded piece by piece). ok is
// false when the patch is not plain — it fails to apply, or names fields the
// type does not have — and the JSON path must give the exact error or
// warnings.
func strategicPatchObject(res *registry.Resource, cur runtime.Object, patch []byte) (runtime.Object, bool) {
	top, ok := decodeRawObject(patch)
	if !ok {
		return nil, false // duplicate fields: the JSON path reports them
	}
	if raw, ok := top["apiVersion"]; ok && !rawIsString(raw, res.GroupVersion().String()) {
		return nil, false
	}
	if raw, ok := top["kind"]; ok && !rawIsString(raw, res.Kind) {
		return nil, false
	}
	obj, out := patchFields(cur, top)
	switch out {
	case refuse:
		return nil, false
	case general:
		patchMap, ok := decodeMap(patch)
		if !ok {
			return nil, false
		}
		if obj, ok = patchWhole(res, cur, patchMap); !ok {
			return nil, false
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(res.GVK())
	dropUnchangedVersion(cur, obj)
	return obj, true
}

// patchWhole merges patchMap into all of cur.
func patchWhole(res *registry.Resource, cur runtime.Object, patchMap map[string]interface{}) (runtime.Object, bool) {
	curMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	if err != nil {
		return nil, false
	}
	merged, err := strategicpatch.StrategicMergeMapPatch(curMap, patchMap, res.New())
	if err != nil {
		return nil, false
	}
	obj := res.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(merged, obj, true); err != nil {
		return nil, false
	}
	return obj, true
}

// patchFields merges each top-level field the patch names on its own, as
// strategic merge does key by key: a status patch touches only the status,
// not the whole object. It takes only patches whose top-level values are
// all objects (metadata, spec, status) and returns a new object sharing
// cur's other fields; cur is left as it was.
func patchFields(cur runtime.Object, patch map[string]json.RawMessage) (runtime.Object, mergeOutcome) {
	v := reflect.ValueOf(cur)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, general
	}
	out := reflect.New(v.Elem().Type())
	out.Elem().Set(v.Elem())
	for key, raw := range patch {
		if key == "apiVersion" || key == "kind" {
			continue
		}
		if rawKind(raw) != '{' || strings.HasPrefix(key, "$") {
			return nil, general
		}
		i, ok := jsonFieldIndex(out.Elem().Type(), key)
		if !ok {
			return nil, general
		}
		field := out.Elem().Field(i)
		if field.Kind() != reflect.Struct {
			return nil, general
		}
		nv, ok := patchStruct(field, raw)
		if !ok {
			return nil, refuse
		}
		field.Set(nv)
	}
	return out.Interface().(runtime.Object), merged
}

// patchStruct merges the patch object raw into the struct field and returns
// the result: field by field where the patch is plain (mergeStruct), else
// the whole field through its unstructured form. false: the JSON path must
// decide.
func patchStruct(field reflect.Value, raw json.RawMessage) (reflect.Value, bool) {
	sub, ok := decodeRawObject(raw)
	if !ok {
		return reflect.Value{}, false
	}
	nv := reflect.New(field.Type()).Elem()
	nv.Set(field)
	switch mergeStruct(nv, sub) {
	case merged:
		return nv, true
	case refuse:
		return reflect.Value{}, false
	}
	patch, ok := decodeMap(raw)
	if !ok {
		return reflect.Value{}, false
	}
	return patchConverted(field, patch)
}

// patchConverted merges patch into the struct field through its
// unstructured form, as the strategic merge of the JSON does.
func patchConverted(field reflect.Value, patch map[string]interface{}) (reflect.Value, bool) {
	orig, err := runtime.DefaultUnstructuredConverter.ToUnstructured(field.Addr().Interface())
	if err != nil {
		return reflect.Value{}, false
	}
	meta, err := strategicpatch.NewPatchMetaFromStruct(field.Interface())
	if err != nil {
		return reflect.Value{}, false
	}
	merged, err := strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(orig, patch, meta)
	if err != nil {
		return reflect.Value{}, false
	}
	nv := reflect.New(field.Type())
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(merged, nv.Interface(), true); err != nil {
		return reflect.Value{}, false
	}
	return nv.Elem(), true
}

// jsonFieldIndex finds the field of struct type t serialised as name. An
// empty or "-" name is no field's (inline and skipped fields have those
// tags).
func jsonFieldIndex(t reflect.Type, name string) (int, bool) {
	if name == "" || name == "-" {
		return 0, false
	}
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag == name {
			return i, true
		}
	}
	return 0, false
}
