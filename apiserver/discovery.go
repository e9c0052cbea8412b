package apiserver

import (
	"net/http"
	"runtime"
	"sort"
	"strings"

	"github.com/batchlet/batchlet/apiserver/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

func (s *Server) serveVersion(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, version.Info{
		Major: Major, Minor: Minor, GitVersion: GitVersion, GitCommit: "batchlet", GitTreeState: "clean",
		BuildDate: "2026-01-01T00:00:00Z", GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	})
}

// extraGroups are served for discovery only: policy/v1 tells kubectl drain
// that the eviction subresource exists.
var extraGroups = []string{}

// groupVersions returns the served API group versions (core excluded).
func (s *Server) groupVersions() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range s.ordered {
		gv := r.GroupVersion().String()
		if r.GVR.Group != "" && !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	return append(out, extraGroups...)
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
		writeJSON(w, http.StatusOK, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}},
		})
	case path == "/api/v1":
		writeJSON(w, http.StatusOK, s.resourceList("", "v1"))
	case path == "/apis":
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, gv := range s.groupVersions() {
			list.Groups = append(list.Groups, apiGroup(gv))
		}
		writeJSON(w, http.StatusOK, list)
	case len(parts) == 2 && parts[0] == "apis":
		for _, gv := range s.groupVersions() {
			if strings.HasPrefix(gv, parts[1]+"/") {
				g := apiGroup(gv)
				g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
				writeJSON(w, http.StatusOK, &g)
				return true
			}
		}
		return false
	case len(parts) == 3 && parts[0] == "apis":
		for _, gv := range s.groupVersions() {
			if gv == parts[1]+"/"+parts[2] {
				writeJSON(w, http.StatusOK, s.resourceList(parts[1], parts[2]))
				return true
			}
		}
		return false
	default:
		return false
	}
	return true
}

func apiGroup(gv string) metav1.APIGroup {
	group, ver, _ := strings.Cut(gv, "/")
	v := metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: ver}
	return metav1.APIGroup{Name: group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
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
	for _, r := range s.ordered {
		if r.GVR.Group == group && r.GVR.Version == ver {
			res = append(res, r)
		}
	}
	sort.Slice(res, func(i, j int) bool { return res[i].GVR.Resource < res[j].GVR.Resource })
	for _, r := range res {
		verbs := r.Verbs
		if verbs == nil {
			verbs = registry.DefaultVerbs
		}
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

func subresourceInfo(r *registry.Resource, sub string) metav1.APIResource {
	a := metav1.APIResource{Name: r.GVR.Resource + "/" + sub, Namespaced: r.Namespaced, Kind: r.Kind}
	switch sub {
	case "status":
		a.Verbs = []string{"get", "patch", "update"}
	case "finalize":
		a.Verbs = []string{"update"}
	case "binding":
		a.Kind, a.Verbs = "Binding", []string{"create"}
	case "eviction":
		a.Group, a.Version, a.Kind, a.Verbs = "policy", "v1", "Eviction", []string{"create"}
	case "log":
		a.Verbs = []string{"get"}
	case "exec":
		a.Kind, a.Verbs = "PodExecOptions", []string{"create", "get"}
	case "attach":
		a.Kind, a.Verbs = "PodAttachOptions", []string{"create", "get"}
	}
	return a
}
