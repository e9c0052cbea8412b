package apiserver

import (
	"fmt"
	"net/url"

	"github.com/batchlet/batchlet/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// filter is a parsed label + field selector.
type filter struct {
	res    *registry.Resource
	labels labels.Selector
	fields fields.Selector
}

func (f *filter) empty() bool { return f.labels.Empty() && f.fields.Empty() }

// parseFilter reads labelSelector and fieldSelector from the query.
func parseFilter(res *registry.Resource, q url.Values) (*filter, error) {
	f := &filter{res: res, labels: labels.Everything(), fields: fields.Everything()}
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
	m := accessor(obj)
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
func (f *filter) matches(obj runtime.Object) bool {
	if f.empty() {
		return true
	}
	if !f.labels.Empty() && !f.labels.Matches(labels.Set(accessor(obj).GetLabels())) {
		return false
	}
	if !f.fields.Empty() && !f.fields.Matches(fieldSet(f.res, obj)) {
		return false
	}
	return true
}
