package registry

import "k8s.io/apimachinery/pkg/runtime/schema"

// Subresource is what discovery and the OpenAPI documents say about one
// served subresource: the kind its requests carry and the verbs it answers.
// Both are derived from here, so they cannot disagree.
type Subresource struct {
	Name string
	// GVK is the kind of the subresource's requests and answers; its group
	// and version are the parent's unless the kind belongs elsewhere
	// (eviction: policy/v1, token: authentication.k8s.io/v1).
	GVK   schema.GroupVersionKind
	Verbs []string
	// Connect: the subresource streams or proxies (exec, attach, proxy);
	// each verb is one HTTP method on a connection rather than an object.
	Connect bool
}

// Subresource describes the served subresource sub of r.
func (r *Resource) Subresource(sub string) Subresource {
	s := Subresource{Name: sub, GVK: r.GVK()}
	kindIn := func(gv schema.GroupVersion, kind string) { s.GVK = gv.WithKind(kind) }
	switch sub {
	case "status", "approval":
		s.Verbs = []string{"get", "patch", "update"}
	case "finalize":
		s.Verbs = []string{"update"}
	case "binding":
		s.GVK.Kind, s.Verbs = "Binding", []string{"create"}
	case "eviction":
		kindIn(schema.GroupVersion{Group: "policy", Version: "v1"}, "Eviction")
		s.Verbs = []string{"create"}
	case "token":
		kindIn(schema.GroupVersion{Group: "authentication.k8s.io", Version: "v1"}, "TokenRequest")
		s.Verbs = []string{"create"}
	case "log":
		s.Verbs = []string{"get"}
	case "exec":
		s.GVK.Kind, s.Verbs, s.Connect = "PodExecOptions", []string{"create", "get"}, true
	case "attach":
		s.GVK.Kind, s.Verbs, s.Connect = "PodAttachOptions", []string{"create", "get"}, true
	case "proxy":
		s.GVK.Kind, s.Verbs, s.Connect = "NodeProxyOptions", []string{"create", "delete", "get", "patch", "update"}, true
	}
	return s
}

// ServedVerbs are the verbs of the main resource: Verbs, or DefaultVerbs.
func (r *Resource) ServedVerbs() []string {
	if r.Verbs != nil {
		return r.Verbs
	}
	return DefaultVerbs
}
