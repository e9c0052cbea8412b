package genericstore

import (
	"fmt"
	"net/url"

	"github.com/batchlet/batchlet/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// Filter is a parsed label + field selector.
type Filter struct {
	res    *registry.Resource
	labels labels.Selector
	fields fields.Selector
}

func (f *Filter) empty() bool { return f.labels.Empty() && f.fields.Empty() }

// NewFilter is the filter of res's objects matching both selectors.
func NewFilter(res *registry.Resource, l labels.Selector, f fields.Selector) *Filter {
	return &Filter{res: res, labels: l, fields: f}
}

// Everything is the filter of res that every object passes.
func Everything(res *registry.Resource) *Filter {
	return &Filter{res: res, labels: labels.Everything(), fields: fields.Everything()}
}

// AndName narrows f to the object named name (a watch of one object).
func (f *Filter) AndName(name string) {
	f.fields = fields.AndSelectors(f.fields, fields.OneTermEqualSelector("metadata.name", name))
}

// ParseFilter reads labelSelector and fieldSelector from the query.
func ParseFilter(res *registry.Resource, q url.Values) (*Filter, error) {
	f := &Filter{res: res, labels: labels.Everything(), fields: fields.Everything()}
	if ls := q.Get("labelSelector"); ls != "" {
		sel, err := labels.Parse(ls)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
		f.labels = sel
	}
	if fs := q.Get("fieldSelector"); fs != "" {
		sel, err := fields.ParseSelector(fs)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
		}
		supported := fieldSet(res, res.New())
		for _, req := range sel.Requirements() {
			if _, ok := supported[req.Field]; !ok {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
			}
		}
		f.fields = sel
	}
	return f, nil
}

func fieldSet(res *registry.Resource, obj runtime.Object) fields.Set {
	m := Accessor(obj)
	set := fields.Set{}
	if res.Fields != nil {
		set = res.Fields(obj) // a fresh set per call: add to it
	}
	set["metadata.name"] = m.GetName()
	if res.Namespaced {
		set["metadata.namespace"] = m.GetNamespace()
	}
	return set
}

// matches says whether obj passes the selectors.
func (f *Filter) matches(obj runtime.Object) bool {
	if f.empty() {
		return true
	}
	if !f.labels.Empty() && !f.labels.Matches(labels.Set(Accessor(obj).GetLabels())) {
		return false
	}
	if !f.fields.Empty() && !f.fields.Matches(fieldSet(f.res, obj)) {
		return false
	}
	return true
}
