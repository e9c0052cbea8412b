package patch

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sync"

	"github.com/batchlet/batchlet/apiserver/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"sigs.k8s.io/yaml"
)

// FieldManagers builds and caches one server-side-apply field manager per
// resource and subresource.
type FieldManagers struct {
	mu       sync.Mutex
	scheme   *runtime.Scheme
	builtin  managedfields.TypeConverter
	managers map[string]*managedfields.FieldManager
}

// NewFieldManagers returns an empty cache of field managers for the types
// of scheme.
func NewFieldManagers(scheme *runtime.Scheme) *FieldManagers {
	return &FieldManagers{scheme: scheme, managers: map[string]*managedfields.FieldManager{}}
}

func (f *FieldManagers) get(res *registry.Resource, sub string) (*managedfields.FieldManager, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := res.GVR.String() + "/" + sub
	if m, ok := f.managers[key]; ok {
		return m, nil
	}
	gvk := res.GVK()
	var m *managedfields.FieldManager
	var err error
	if res.CustomResource {
		// No structural type information yet: deduced from the objects,
		// which are unstructured and converted between versions by
		// rewriting apiVersion (conversion strategy None).
		m, err = managedfields.NewDefaultCRDFieldManager(managedfields.NewDeducedTypeConverter(), unstructuredConverter{}, f.scheme, unstructuredConverter{}, gvk, gvk.GroupVersion(), sub, nil)
	} else if res.GVR.Group == "jobset.x-k8s.io" || res.GVR.Group == apiextensionsv1.GroupName {
		// The jobset module ships no structural schema, and client-go's
		// schema has no apiextensions types: deduce types from the
		// objects, as for a CRD without a schema.
		m, err = managedfields.NewDefaultCRDFieldManager(managedfields.NewDeducedTypeConverter(), f.scheme, f.scheme, f.scheme, gvk, gvk.GroupVersion(), sub, nil)
	} else {
		if f.builtin == nil {
			f.builtin = applyconfigurations.NewTypeConverter(f.scheme)
		}
		m, err = managedfields.NewDefaultFieldManager(f.builtin, f.scheme, f.scheme, f.scheme, gvk, gvk.GroupVersion(), sub, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("field manager for %s: %w", key, err)
	}
	f.managers[key] = m
	return m, nil
}

// Apply merges applied, a server-side apply configuration, into live with
// manager's field ownership (force: take conflicting fields) and returns
// the result as res's Go type. sub is "" or "status". Conflicts come back
// as 409, other failures as 422.
func (f *FieldManagers) Apply(res *registry.Resource, sub string, live runtime.Object, applied *unstructured.Unstructured, manager string, force bool) (runtime.Object, error) {
	fm, err := f.get(res, sub)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out, err := fm.Apply(live, applied.DeepCopy(), manager, force)
	if err != nil {
		if apierrors.IsConflict(err) {
			return nil, err
		}
		return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", res.GroupResource(), accessor(live).GetName(), err.Error(), 0, false)
	}
	return typed(res, out)
}

// Update records an Update operation by manager in obj's managedFields
// (cur is the object it replaces). Failures leave obj as it was: a missing
// managedFields entry must not fail the write.
func (f *FieldManagers) Update(res *registry.Resource, sub string, cur, obj runtime.Object, manager string) runtime.Object {
	fm, err := f.get(res, sub)
	if err != nil {
		return obj
	}
	out, err := typed(res, fm.UpdateNoErrors(cur, obj, manager))
	if err != nil {
		return obj
	}
	return out
}

// ParseApply decodes a server-side apply body (YAML or JSON) and checks it
// names the right kind (gvk) and object (name, from the URL).
func ParseApply(data []byte, gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(j, &u.Object); err != nil || u.Object == nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding apply patch: %v", err))
	}
	if u.GroupVersionKind() != gvk {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version and kind in the data (%s, %s) do not match the expected %s, %s",
			u.GetAPIVersion(), u.GetKind(), gvk.GroupVersion(), gvk.Kind))
	}
	if u.GetName() != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", u.GetName(), name))
	}
	if len(u.GetManagedFields()) > 0 {
		return nil, apierrors.NewBadRequest("metadata.managedFields must be nil")
	}
	return u, nil
}

// typed converts a field manager result to the resource's Go type.
func typed(res *registry.Resource, obj runtime.Object) (runtime.Object, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := res.New()
	if res.PruneRaw != nil {
		res.PruneRaw(u.Object)
	}
	if res.DefaultRaw != nil {
		res.DefaultRaw(u.Object)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	out.GetObjectKind().SetGroupVersionKind(res.GVK())
	return out, nil
}

// unstructuredConverter creates and converts custom resources, which are
// unstructured and change version by changing apiVersion alone.
type unstructuredConverter struct{}

func (unstructuredConverter) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func (unstructuredConverter) Convert(in, out, _ interface{}) error {
	src, ok1 := in.(*unstructured.Unstructured)
	dst, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	dst.Object = src.DeepCopy().Object
	return nil
}

func (unstructuredConverter) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("cannot convert %T", in)
	}
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()})
	if !ok {
		return nil, fmt.Errorf("cannot convert %s to %v", u.GroupVersionKind(), target)
	}
	out := u.DeepCopy()
	out.SetGroupVersionKind(gvk)
	return out, nil
}

func (unstructuredConverter) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// KeepManagedFields gives an update that sends no managedFields the current
// ones, as kube-apiserver's field manager does: controllers write back
// objects read from informers (batchlet's local ones drop managedFields),
// which must not wipe what server-side apply recorded. A list holding one
// empty entry clears them, as upstream documents.
func KeepManagedFields(cur, obj runtime.Object) {
	m := accessor(obj)
	switch mf := m.GetManagedFields(); {
	case len(mf) == 0:
		m.SetManagedFields(accessor(cur).GetManagedFields())
	case len(mf) == 1 && reflect.DeepEqual(mf[0], metav1.ManagedFieldsEntry{}):
		m.SetManagedFields(nil)
	}
}
