package build

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/batchlet/batchlet/apiserver/registry"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/common"
)

// Extension names kubectl and client libraries read from operations.
const (
	extAction = "x-kubernetes-action"
	extGVK    = "x-kubernetes-group-version-kind"
)

// Media types batchlet's API server speaks: JSON only, and no server-side
// apply patches; custom-resource-like JobSets take no strategic merge patch.
var (
	producesObject = []string{"application/json"}
	producesList   = []string{"application/json", "application/json;stream=watch"}
	consumesAny    = []string{"*/*"}
	patchTypes     = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"}
	crPatchTypes   = []string{"application/json-patch+json", "application/merge-patch+json"}
)

// gvIdent is the operation-ID infix of a group version: "CoreV1", "BatchV1",
// "EventsV1", "JobsetXK8sIoV1alpha2".
func gvIdent(gv schema.GroupVersion) string {
	group := gv.Group
	if group == "" {
		group = "core"
	}
	group = strings.TrimSuffix(group, ".k8s.io")
	var b strings.Builder
	for _, part := range strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String() + strings.ToUpper(gv.Version[:1]) + gv.Version[1:]
}

// gvTag is the operation tag of a group version: "core_v1", "batch_v1".
func gvTag(gv schema.GroupVersion) string {
	id := gvIdent(gv)
	group := strings.TrimSuffix(id, strings.ToUpper(gv.Version[:1])+gv.Version[1:])
	return strings.ToLower(group[:1]) + group[1:] + "_" + gv.Version
}

// gvkExt is the value of the x-kubernetes-group-version-kind extension.
func gvkExt(gvk schema.GroupVersionKind) map[string]string {
	return map[string]string{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

// routeBuilder accumulates the routes of one group version.
type routeBuilder struct {
	gv     groupVersion
	routes []common.Route
}

func (b *routeBuilder) add(method, path, verb, name, action string, gvk schema.GroupVersionKind, ps []param) *route {
	r := &route{
		method:   method,
		path:     path,
		opID:     verb + gvIdent(b.gv.gv) + name,
		tag:      gvTag(b.gv.gv),
		params:   params(ps...),
		produces: producesObject,
		metadata: map[string]interface{}{extAction: action, extGVK: gvkExt(gvk)},
	}
	b.routes = append(b.routes, r)
	return r
}

func ok(model interface{}) []common.StatusCodeResponse {
	return []common.StatusCodeResponse{response{http.StatusOK, "OK", model}}
}

func created(model interface{}) []common.StatusCodeResponse {
	return append(ok(model), response{http.StatusCreated, "Created", model})
}

func accepted(model interface{}, rs []common.StatusCodeResponse) []common.StatusCodeResponse {
	return append(rs, response{http.StatusAccepted, "Accepted", model})
}

// scope returns the collection path and the operation-name infix of a resource.
func (b *routeBuilder) scope(r resource) (string, string) {
	if r.namespaced {
		return b.gv.root() + "/namespaces/{namespace}/" + r.plural, "Namespaced"
	}
	return b.gv.root() + "/" + r.plural, ""
}

func withNS(r resource, ps []param) []param {
	if r.namespaced {
		return append([]param{pNamespace}, ps...)
	}
	return ps
}

func nameParam(what string) param {
	return pathParam("name", "name of the "+what)
}

// addResource adds the operations of the verbs a resource and its
// subresources serve. list covers watch (the watch parameter), as upstream's
// documents do besides their deprecated /watch/ paths.
func (b *routeBuilder) addResource(r resource) error {
	coll, infix := b.scope(r)
	item := coll + "/{name}"
	kind := r.gvk.Kind
	named := func(ps []param) []param { return withNS(r, append([]param{nameParam(kind)}, ps...)) }

	if r.serves("list") {
		list := b.add(http.MethodGet, coll, "list", infix+kind, "list", r.gvk, withNS(r, listParams()))
		list.desc, list.produces, list.consumes, list.responses = "list or watch objects of kind "+kind, producesList, consumesAny, ok(r.list)
		if r.namespaced {
			all := b.add(http.MethodGet, b.gv.root()+"/"+r.plural, "list", kind+"ForAllNamespaces", "list", r.gvk, listParams())
			all.desc, all.produces, all.consumes, all.responses = "list or watch objects of kind "+kind, producesList, consumesAny, ok(r.list)
		}
	}
	if r.serves("create") {
		create := b.add(http.MethodPost, coll, "create", infix+kind, "post", r.gvk, withNS(r, writeParams()))
		create.desc, create.consumes, create.body, create.responses = "create "+kind, consumesAny, r.obj, accepted(r.obj, created(r.obj))
		if r.createOnly {
			create.desc = "create a " + kind
		}
	}
	if r.serves("deletecollection") {
		dc := b.add(http.MethodDelete, coll, "deleteCollection", infix+kind, "deletecollection", r.gvk, withNS(r, deleteCollectionParams()))
		dc.desc, dc.consumes, dc.body, dc.responses = "delete collection of "+kind, consumesAny, modelDeleteOptions, ok(modelStatus)
	}
	if r.serves("get") {
		read := b.add(http.MethodGet, item, "read", infix+kind, "get", r.gvk, named([]param{pPretty}))
		read.desc, read.consumes, read.responses = "read the specified "+kind, consumesAny, ok(r.obj)
	}
	b.addUpdate(item, infix+kind, "the specified "+kind, r, r.verbs, named)
	if r.serves("delete") {
		deleted := interface{}(modelStatus)
		if r.deleteReturnsObject {
			deleted = r.obj
		}
		del := b.add(http.MethodDelete, item, "delete", infix+kind, "delete", r.gvk, named(deleteParams()))
		del.desc, del.consumes, del.body, del.responses = "delete "+kind, consumesAny, modelDeleteOptions, accepted(deleted, ok(deleted))
	}
	for _, sub := range r.subresources {
		if err := b.addSubresource(r, item, infix, sub, named); err != nil {
			return err
		}
	}
	return nil
}

// addUpdate adds the PUT and PATCH operations (of verbs) of an object or
// its status.
func (b *routeBuilder) addUpdate(path, name, what string, r resource, verbs []string, named func([]param) []param) {
	if slices.Contains(verbs, "update") {
		put := b.add(http.MethodPut, path, "replace", name, "put", r.gvk, named(writeParams()))
		put.desc, put.consumes, put.body, put.responses = "replace "+what, consumesAny, r.obj, created(r.obj)
	}
	if slices.Contains(verbs, "patch") {
		patch := b.add(http.MethodPatch, path, "patch", name, "patch", r.gvk, named(patchParams()))
		patch.desc, patch.body, patch.responses = "partially update "+what, modelPatch, created(r.obj)
		patch.consumes = patchTypes
		if r.noStrategicMerge {
			patch.consumes = crPatchTypes
		}
	}
}

// connectMethods are the HTTP methods of a connect subresource's verbs.
var connectMethods = map[string]string{
	"get": http.MethodGet, "create": http.MethodPost, "update": http.MethodPut, "patch": http.MethodPatch, "delete": http.MethodDelete,
}

// subresourceName is the operation-name suffix of a subresource: "Status", "Exec".
func subresourceName(sub string) string {
	return strings.ToUpper(sub[:1]) + sub[1:]
}

func (b *routeBuilder) addSubresource(r resource, item, infix string, sub registry.Subresource, named func([]param) []param) error {
	kind := r.gvk.Kind
	path := item + "/" + sub.Name
	name := infix + kind + subresourceName(sub.Name)
	if sub.Connect {
		return b.addConnect(r, path, name, sub)
	}
	model, err := subresourceModel(r, sub)
	if err != nil {
		return err
	}
	what := sub.Name + " of the specified " + kind
	for _, verb := range sub.Verbs {
		switch verb {
		case "get":
			read := b.add(http.MethodGet, path, "read", name, "get", sub.GVK, named([]param{pPretty}))
			read.desc, read.consumes, read.responses = "read "+what, consumesAny, ok(model)
			if sub.Name == "log" {
				read.params, read.responses, read.produces = params(named(logParams())...), ok(""), []string{"text/plain"}
			}
		case "update", "patch":
			b.addUpdate(path, name, what, r, []string{verb}, named)
		case "create":
			ps := withNS(r, append([]param{pathParam("name", "name of the "+sub.GVK.Kind)}, writeParams()...))
			create := b.add(http.MethodPost, path, "create", name, "post", sub.GVK, ps)
			create.desc, create.consumes, create.body, create.responses = "create "+sub.Name+" of a "+kind, consumesAny, model, accepted(model, created(model))
		default:
			return fmt.Errorf("%s/%s: no operation for verb %q", r.plural, sub.Name, verb)
		}
	}
	return nil
}

// addConnect adds one connect operation per verb of a streaming or proxying
// subresource; proxy also takes the rest of the path.
func (b *routeBuilder) addConnect(r resource, path, name string, sub registry.Subresource) error {
	paths := []string{path}
	if sub.Name == "proxy" {
		paths = append(paths, path+"/{path}")
	}
	for i, p := range paths {
		ps := []param{pathParam("name", "name of the "+sub.GVK.Kind)}
		switch sub.Name {
		case "exec":
			ps = append(ps, execParams()...)
		case "attach":
			ps = append(ps, attachParams()...)
		case "proxy":
			if i == 1 {
				ps = append(ps, pathParam("path", "path to the resource"))
			} else {
				ps = append(ps, pProxyPath)
			}
		}
		suffix := ""
		if i == 1 {
			suffix = "WithPath"
		}
		for _, verb := range sub.Verbs {
			method, found := connectMethods[verb]
			if !found {
				return fmt.Errorf("%s/%s: no method for verb %q", r.plural, sub.Name, verb)
			}
			op := b.add(method, p, "connect"+method[:1]+strings.ToLower(method[1:]), name+suffix, "connect", sub.GVK, withNS(r, ps))
			op.desc = "connect " + method + " requests to " + sub.Name + " of " + r.gvk.Kind
			op.consumes, op.produces, op.responses = consumesAny, []string{"*/*"}, ok("")
		}
	}
	return nil
}

// addDiscovery adds the "get available resources" operation of the group version.
func (b *routeBuilder) addDiscovery() {
	r := &route{
		method:    http.MethodGet,
		path:      b.gv.root() + "/",
		opID:      "get" + gvIdent(b.gv.gv) + "APIResources",
		tag:       gvTag(b.gv.gv),
		desc:      "get available resources",
		consumes:  []string{"application/json"},
		produces:  []string{"application/json"},
		responses: ok(modelResourceList),
	}
	b.routes = append(b.routes, r)
}

// containers returns one route container per served group version.
func containers() ([]*container, error) {
	var out []*container
	for _, gv := range served() {
		b := &routeBuilder{gv: gv}
		b.addDiscovery()
		for _, r := range gv.resources {
			if err := b.addResource(r); err != nil {
				return nil, err
			}
		}
		out = append(out, &container{root: gv.root(), routes: b.routes})
	}
	return out, nil
}

// operationIDAndTags names an operation and tags it with its group version.
func operationIDAndTags(r common.Route) (string, []string, error) {
	own, isOwn := r.(*route)
	if !isOwn || own.tag == "" {
		return r.OperationName(), nil, nil
	}
	return r.OperationName(), []string{own.tag}, nil
}
