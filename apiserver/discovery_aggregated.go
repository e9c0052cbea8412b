package apiserver

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// aggregatedContentType is the media type of aggregated discovery (v2).
const aggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// wantsAggregated says whether the Accept header asks for aggregated
// discovery v2.
func wantsAggregated(r *http.Request) bool {
	for _, clause := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(clause))
		if err == nil && mt == "application/json" && params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" && params["as"] == "APIGroupDiscoveryList" {
			return true
		}
	}
	return false
}

// serveAggregated answers /api (core) or /apis (groups) in one document.
func (s *Server) serveAggregated(w http.ResponseWriter, core bool) {
	list := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	groups := []metav1.APIGroup{{Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "v1", Version: "v1"}}}}
	if !core {
		groups = s.apiGroups()
	}
	for _, ag := range groups {
		g := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: ag.Name}}
		for _, gv := range ag.Versions {
			v := apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent, Resources: []apidiscoveryv2.APIResourceDiscovery{}}
			for _, r := range s.resourceList(ag.Name, gv.Version).APIResources {
				if strings.Contains(r.Name, "/") {
					continue
				}
				v.Resources = append(v.Resources, s.aggregatedResource(ag.Name, gv.Version, r))
			}
			g.Versions = append(g.Versions, v)
		}
		list.Items = append(list.Items, g)
	}
	data, err := json.Marshal(list)
	if err != nil {
		endpoints.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", aggregatedContentType)
	w.Header().Set("Vary", "Accept")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func (s *Server) aggregatedResource(group, version string, r metav1.APIResource) apidiscoveryv2.APIResourceDiscovery {
	scope := apidiscoveryv2.ScopeCluster
	if r.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	out := apidiscoveryv2.APIResourceDiscovery{
		Resource: r.Name, ResponseKind: &metav1.GroupVersionKind{Group: group, Version: version, Kind: r.Kind},
		Scope: scope, SingularResource: r.SingularName, Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
	}
	res := s.resource(group, version, r.Name)
	if res == nil {
		return out
	}
	for _, sub := range res.Subresources {
		info := subresourceInfo(res, sub)
		g, v := info.Group, info.Version
		if g == "" && v == "" {
			g, v = group, version
		}
		out.Subresources = append(out.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: sub, ResponseKind: &metav1.GroupVersionKind{Group: g, Version: v, Kind: info.Kind}, Verbs: info.Verbs,
		})
	}
	return out
}
