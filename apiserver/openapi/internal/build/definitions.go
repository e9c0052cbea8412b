package build

import (
	"slices"
	"sort"
	"strings"

	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/batchlet/batchlet/apiserver/openapi/internal/k8sdefs"
)

// definitions merges the generated Kubernetes definitions (keyed by model
// name, "io.k8s.api.batch.v1.Job") with the JobSet module's definitions
// (keyed by Go name, "sigs.k8s.io/jobset/api/jobset/v1alpha2.JobSet"). The
// JobSet definitions depend on Kubernetes types by Go name; those
// dependencies are rewritten to model names so every lookup resolves.
func definitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	out := k8sdefs.GetOpenAPIDefinitions(ref)
	// apiextensions-apiserver ships its types' definitions (CRDs); the
	// shared apimachinery ones are k8sdefs' already.
	for name, def := range apiextensionsopenapi.GetOpenAPIDefinitions(ref) {
		if _, found := out[name]; !found {
			out[name] = def
		}
	}
	for name, def := range jobsetv1alpha2.GetOpenAPIDefinitions(ref) {
		deps := make([]string, len(def.Dependencies))
		for i, dep := range def.Dependencies {
			deps[i] = dep
			if strings.HasPrefix(dep, "k8s.io/") {
				deps[i] = util.ToRESTFriendlyName(dep)
			}
		}
		def.Dependencies = deps
		out[name] = def
	}
	return out
}

// friendlyName is the name a definition has in the documents.
func friendlyName(name string) string {
	if strings.Contains(name, "/") {
		return util.ToRESTFriendlyName(name)
	}
	return name
}

// definitionNamer names definitions and tags those that are API kinds with
// the x-kubernetes-group-version-kind extension.
type definitionNamer struct {
	gvks map[string][]schema.GroupVersionKind
}

func newDefinitionNamer() *definitionNamer {
	n := &definitionNamer{gvks: map[string][]schema.GroupVersionKind{}}
	var gvs []schema.GroupVersion
	addGV := func(gv schema.GroupVersion) {
		if !slices.Contains(gvs, gv) {
			gvs = append(gvs, gv)
		}
	}
	for _, gv := range served() {
		addGV(gv.gv)
		for _, r := range gv.resources {
			n.add(r.obj, r.gvk)
			if r.list != nil {
				n.add(r.list, r.gvk.GroupVersion().WithKind(r.gvk.Kind+"List"))
			}
		}
	}
	// Subresource kinds of other groups (policy/v1 Eviction) make their
	// group version's DeleteOptions and WatchEvent known too, as upstream.
	for gvk, model := range subresourceModels {
		n.add(model, gvk)
		addGV(gvk.GroupVersion())
	}
	for _, gv := range gvs {
		n.add(modelDeleteOptions, gv.WithKind("DeleteOptions"))
		n.add(modelWatchEvent, gv.WithKind("WatchEvent"))
	}
	n.add(modelStatus, core("Status"))
	for _, list := range n.gvks {
		sort.Slice(list, func(i, j int) bool {
			if list[i].Group != list[j].Group {
				return list[i].Group < list[j].Group
			}
			return list[i].Version < list[j].Version
		})
	}
	return n
}

func (n *definitionNamer) add(model interface{}, gvk schema.GroupVersionKind) {
	name := friendlyName(util.GetCanonicalTypeName(model))
	n.gvks[name] = append(n.gvks[name], gvk)
}

// name implements common.Config.GetDefinitionName.
func (n *definitionNamer) name(name string) (string, spec.Extensions) {
	friendly := friendlyName(name)
	gvks := n.gvks[friendly]
	if len(gvks) == 0 {
		return friendly, nil
	}
	values := make([]interface{}, len(gvks))
	for i, gvk := range gvks {
		values[i] = map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
	}
	return friendly, spec.Extensions{extGVK: values}
}
