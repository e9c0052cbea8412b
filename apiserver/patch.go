package apiserver

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/batchlet/batchlet/apiserver/registry"
	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func (s *Server) handlePatch(w http.ResponseWriter, r *http.Request, info requestInfo, mode updateMode) {
	res := info.Res
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	pt := types.PatchType(mt)
	switch pt {
	case types.JSONPatchType, types.MergePatchType:
	case types.ApplyPatchType:
		s.handleApply(w, r, info, mode)
		return
	case types.StrategicMergePatchType:
		if res.CustomResource {
			s.writeError(w, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", res.GroupResource(), info.Name,
				fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
					types.JSONPatchType, types.MergePatchType, types.ApplyPatchType), 0, false))
			return
		}
		if res.NoStrategicMerge {
			s.writeError(w, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", res.GroupResource(), info.Name,
				"strategic merge patch format is not supported", 0, false))
			return
		}
	default:
		s.writeError(w, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", res.GroupResource(), info.Name,
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s, %s",
				types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyPatchType), 0, false))
		return
	}
	patch, err := s.readBody(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if !json.Valid(patch) {
		s.writeError(w, apierrors.NewBadRequest("error decoding patch: invalid JSON"))
		return
	}
	var jp jsonpatch.Patch
	if pt == types.JSONPatchType {
		if jp, err = jsonpatch.DecodePatch(patch); err != nil {
			s.writeError(w, apierrors.NewBadRequest(err.Error()))
			return
		}
	}
	// applyPatch only reads cur, but the typed merge shares cur's unpatched
	// parts with its result.
	share := mayShare(r.Context(), mode)
	out, err := s.updateReading(r.Context(), res, info.Namespace, info.Name, mode, isDryRun(r), func(cur runtime.Object) (runtime.Object, error) {
		if !share {
			cur = cur.DeepCopyObject()
		}
		return s.applyPatch(w, r, res, pt, patch, jp, cur)
	})
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeObject(w, r, res, http.StatusOK, out)
}

// applyPatch applies a patch to the JSON of cur and decodes the result. The
// result keeps cur's resourceVersion unless the patch sets one (then it is
// a precondition).
func (s *Server) applyPatch(w http.ResponseWriter, r *http.Request, res *registry.Resource, pt types.PatchType, patch []byte, jp jsonpatch.Patch, cur runtime.Object) (runtime.Object, error) {
	if pt == types.StrategicMergePatchType {
		if obj, ok := strategicPatchObject(res, cur, patch); ok {
			return obj, nil
		}
	}
	orig, err := s.currentJSON(res, cur)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var patched []byte
	switch pt {
	case types.JSONPatchType:
		patched, err = jp.Apply(orig)
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(orig, patch)
	case types.StrategicMergePatchType:
		patched, err = strategicpatch.StrategicMergePatch(orig, patch, res.New())
	}
	if err != nil {
		return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", res.GroupResource(), accessor(cur).GetName(), err.Error(), 0, false)
	}
	obj := res.New()
	if err := s.decodeJSON(w, r, patched, res.GVK(), obj); err != nil {
		return nil, err
	}
	m := accessor(obj)
	if m.GetResourceVersion() == accessor(cur).GetResourceVersion() {
		// Not a precondition: a retry after a concurrent write re-applies
		// the patch to the newer object.
		m.SetResourceVersion("")
	}
	return obj, nil
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
	m := accessor(obj)
	if m.GetResourceVersion() == accessor(cur).GetResourceVersion() {
		m.SetResourceVersion("")
	}
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

// currentJSON is the served JSON of cur, an object as read from the store
// (its resourceVersion is its stored revision): shared with the watches
// that already encoded that version.
func (s *Server) currentJSON(res *registry.Resource, cur runtime.Object) ([]byte, error) {
	m := accessor(cur)
	rev, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return json.Marshal(cur)
	}
	key := objKey{viewOf(res), objectKey(res, m.GetNamespace(), m.GetName())}
	ent, err := s.entCache.get(key, rev, func() (*storedEntry, error) {
		data, err := json.Marshal(cur)
		if err != nil {
			return nil, err
		}
		return &storedEntry{data: data, labels: m.GetLabels()}, nil
	})
	if err != nil {
		return nil, err
	}
	return ent.data, nil
}
