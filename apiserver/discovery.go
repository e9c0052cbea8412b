package apiserver

import (
	"github.com/batchlet/batchlet/apiserver/endpoints"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/batchlet/batchlet/apiserver/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

func (s *Server) serveVersion(w http.ResponseWriter) {
	endpoints.WriteJSON(w, http.StatusOK, version.Info{
		Major: Major, Minor: Minor, GitVersion: GitVersion, GitCommit: "batchlet", GitTreeState: "clean",
		BuildDate: "2026-01-01T00:00:00Z", GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	})
}

// apiGroups returns the served API groups (core excluded) in discovery
// order, each with its versions, the preferred (highest by Kubernetes'
// version ordering, as for CRDs upstream) first.
func (s *Server) apiGroups() []metav1.APIGroup {
	var order []string
	versions := map[string][]string{}
	add := func(gv string) {
		group, ver, _ := strings.Cut(gv, "/")
		if _, ok := versions[group]; !ok {
			order = append(order, group)
		}
		if !slices.Contains(versions[group], ver) {
			versions[group] = append(versions[group], ver)
		}
	}
	for _, r := range s.served.list() {
		if r.GVR.Group != "" {
			add(r.GroupVersion().String())
		}
	}
	out := make([]metav1.APIGroup, 0, len(order))
	for _, group := range order {
		vs := versions[group]
		sort.SliceStable(vs, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(vs[i], vs[j]) > 0 })
		g := metav1.APIGroup{Name: group}
		for _, v := range vs {
			g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + v, Version: v})
		}
		g.PreferredVersion = g.Versions[0]
		out = append(out, g)
	}
	return out
}

// servesGroupVersion says whether group/ver is served.
func (s *Server) servesGroupVersion(group, ver string) bool {
	for _, g := range s.apiGroups() {
		if g.Name != group {
			continue
		}
		for _, v := range g.Versions {
			if v.Version == ver {
				return true
			}
		}
	}
	return false
}

// serveDiscovery answers /api, /apis and their group/version documents.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) bool {
	path := strings.TrimSuffix(r.URL.Path, "/")
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if (path == "/api" || path == "/apis") && wantsAggregated(r) {
		s.serveAggregated(w, path == "/api")
		return true
	}
	switch {
	case path == "/api":
		endpoints.WriteJSON(w, http.StatusOK, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}},
		})
	case path == "/api/v1":
		endpoints.WriteJSON(w, http.StatusOK, s.resourceList("", "v1"))
	case path == "/apis":
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		list.Groups = s.apiGroups()
		endpoints.WriteJSON(w, http.StatusOK, list)
	case len(parts) == 2 && parts[0] == "apis":
		for _, g := range s.apiGroups() {
			if g.Name == parts[1] {
				g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
				endpoints.WriteJSON(w, http.StatusOK, &g)
				return true
			}
		}
		return false
	case len(parts) == 3 && parts[0] == "apis":
		if s.servesGroupVersion(parts[1], parts[2]) {
			endpoints.WriteJSON(w, http.StatusOK, s.resourceList(parts[1], parts[2]))
			return true
		}
		return false
	default:
		return false
	}
	return true
}

// resourceList is the APIResourceList of one group version, subresources
// included.
func (s *Server) resourceList(group, ver string) *metav1.APIResourceList {
	gv := metav1.GroupVersion{Group: group, Version: ver}.String()
	if group == "" {
		gv = ver
	}
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv,
		APIResources: []metav1.APIResource{}}
	var res []*registry.Resource
	for _, r := range s.served.list() {
		if r.GVR.Group == group && r.GVR.Version == ver {
			res = append(res, r)
		}
	}
	sort.Slice(res, func(i, j int) bool { return res[i].GVR.Resource < res[j].GVR.Resource })
	for _, r := range res {
		verbs := r.ServedVerbs()
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: r.GVR.Resource, SingularName: r.Singular, Namespaced: r.Namespaced, Kind: r.Kind,
			Verbs: verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		})
		for _, sub := range r.Subresources {
			list.APIResources = append(list.APIResources, subresourceInfo(r, sub))
		}
	}
	return list
}

// subresourceInfo is the discovery entry of a subresource, as the registry
// describes it (the OpenAPI documents are built from the same description).
func subresourceInfo(r *registry.Resource, sub string) metav1.APIResource {
	d := r.Subresource(sub)
	a := metav1.APIResource{Name: r.GVR.Resource + "/" + sub, Namespaced: r.Namespaced, Kind: d.GVK.Kind, Verbs: d.Verbs}
	if d.GVK.GroupVersion() != r.GroupVersion() {
		a.Group, a.Version = d.GVK.Group, d.GVK.Version
	}
	return a
}
