package apiserver

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/batchlet/batchlet/apiserver/openapi"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// servedOp is one verb on one resource or subresource of a group version,
// with the kind its requests carry: what discovery announces and what an
// OpenAPI operation documents.
type servedOp struct {
	gv, resource, verb string
	gvk                schema.GroupVersionKind
}

func (o servedOp) String() string {
	return o.gv + " " + o.resource + " " + o.verb + " (" + o.gvk.String() + ")"
}

// openAPIOperation is the part of an operation the comparison reads.
type openAPIOperation struct {
	Action string            `json:"x-kubernetes-action"`
	GVK    map[string]string `json:"x-kubernetes-group-version-kind"`
}

type openAPIDocument struct {
	Paths map[string]map[string]json.RawMessage `json:"paths"`
}

// TestDiscoveryAndOpenAPIAgree fails when the resources, subresources,
// verbs and kinds discovery announces are not exactly those the OpenAPI v2
// and v3 documents describe: both must come from the registry.
func TestDiscoveryAndOpenAPIAgree(t *testing.T) {
	oa, err := openapi.New()
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnvWith(t, func(c *Config) { c.OpenAPIV2, c.OpenAPIV3 = oa.V2Handler(), oa.V3Handler() })

	discovered, scopes := discoveredOps(t, env)
	// OpenAPI v2 documents the built-in resources only; custom resources
	// (ContainerResults, installed at start) are in v3 (docs/differences.md).
	builtin := map[servedOp]bool{}
	custom := customGroupVersions(env.srv)
	for op := range discovered {
		if !custom[op.gv] {
			builtin[op] = true
		}
	}
	var v2 openAPIDocument
	getJSON(t, env, "/openapi/v2", &v2)
	assertSameOps(t, "discovery", builtin, "openapi v2", documentedOps(t, v2, scopes))

	// Each served group version has its v3 document, describing exactly
	// what discovery serves in it, and no other document is listed.
	var index struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	getJSON(t, env, "/openapi/v3", &index)
	var keys []string
	for key := range index.Paths {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	if want := servedRoots(discovered); !slices.Equal(keys, want) {
		t.Errorf("openapi v3 documents %v, discovery serves %v", keys, want)
	}
	for _, key := range keys {
		var v3 openAPIDocument
		getJSON(t, env, "/openapi/v3/"+key, &v3)
		assertSameOps(t, "discovery of /"+key, opsUnder(discovered, key), "openapi v3 "+key, documentedOps(t, v3, scopes))
	}
}

// customGroupVersions are the group versions served only by CRDs.
func customGroupVersions(s *Server) map[string]bool {
	custom, builtin := map[string]bool{}, map[string]bool{}
	for _, r := range s.served.List() {
		if r.CustomResource {
			custom[r.GroupVersion().String()] = true
		} else {
			builtin[r.GroupVersion().String()] = true
		}
	}
	for gv := range builtin {
		delete(custom, gv)
	}
	return custom
}

// discoveredOps lists every verb of every resource and subresource in
// legacy discovery, and whether each resource is namespaced.
func discoveredOps(t *testing.T, env *testEnv) (map[servedOp]bool, map[string]bool) {
	t.Helper()
	_, lists, err := env.client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	ops, namespaced := map[servedOp]bool{}, map[string]bool{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.APIResources {
			kindGV := gv
			if r.Group != "" || r.Version != "" {
				kindGV = schema.GroupVersion{Group: r.Group, Version: r.Version}
			}
			namespaced[list.GroupVersion+" "+strings.Split(r.Name, "/")[0]] = r.Namespaced
			for _, verb := range r.Verbs {
				ops[servedOp{gv: list.GroupVersion, resource: r.Name, verb: verb, gvk: kindGV.WithKind(r.Kind)}] = true
			}
		}
	}
	return ops, namespaced
}

// documentedOps reads the operations of an OpenAPI document as servedOps.
// A list operation documents watch too (its watch parameter). Paths of a
// namespaced resource must be under namespaces/{namespace}, but for the
// list across namespaces.
func documentedOps(t *testing.T, doc openAPIDocument, namespaced map[string]bool) map[servedOp]bool {
	t.Helper()
	ops := map[servedOp]bool{}
	for path, item := range doc.Paths {
		gv, resource, inNamespace, ok := splitOpenAPIPath(path)
		if !ok {
			continue // a group version's discovery document
		}
		parent := gv + " " + strings.Split(resource, "/")[0]
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op openAPIOperation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			verbs := actionVerbs(op.Action, method)
			if verbs == nil {
				t.Errorf("%s %s: unknown action %q", method, path, op.Action)
			}
			acrossNamespaces := op.Action == "list" && !inNamespace
			if namespaced[parent] != inNamespace && !acrossNamespaces {
				t.Errorf("%s %s: in a namespace = %t, discovery says namespaced = %t", method, path, inNamespace, namespaced[parent])
			}
			gvk := schema.GroupVersionKind{Group: op.GVK["group"], Version: op.GVK["version"], Kind: op.GVK["kind"]}
			for _, verb := range verbs {
				ops[servedOp{gv: gv, resource: resource, verb: verb, gvk: gvk}] = true
			}
		}
	}
	return ops
}

// splitOpenAPIPath splits "/api/v1/namespaces/{namespace}/pods/{name}/log"
// into "v1", "pods/log" and true; "/apis/policy/v1/poddisruptionbudgets"
// into "policy/v1", "poddisruptionbudgets" and false.
func splitOpenAPIPath(path string) (gv, resource string, inNamespace, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		gv, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		gv, parts = parts[1]+"/"+parts[2], parts[3:]
	default:
		return "", "", false, false
	}
	if len(parts) > 2 && parts[0] == "namespaces" && parts[1] == "{namespace}" {
		inNamespace, parts = true, parts[2:]
	}
	resource = parts[0]
	if len(parts) >= 3 { // {name}/sub, and proxy's {path}
		resource += "/" + parts[2]
	}
	return gv, resource, inNamespace, true
}

// actionVerbs maps an operation's x-kubernetes-action to discovery verbs;
// a connect operation's verb is its method's.
func actionVerbs(action, method string) []string {
	switch action {
	case "list":
		return []string{"list", "watch"}
	case "post":
		return []string{"create"}
	case "put":
		return []string{"update"}
	case "get", "patch", "delete", "deletecollection":
		return []string{action}
	case "connect":
		verb, found := map[string]string{"get": "get", "post": "create", "put": "update", "patch": "patch", "delete": "delete"}[method]
		if found {
			return []string{verb}
		}
	}
	return nil
}

func opsUnder(ops map[servedOp]bool, key string) map[servedOp]bool {
	out := map[servedOp]bool{}
	for op := range ops {
		if rootOf(op.gv) == key {
			out[op] = true
		}
	}
	return out
}

// rootOf is the v3 document key of a group version: "api/v1", "apis/batch/v1".
func rootOf(gv string) string {
	if strings.Contains(gv, "/") {
		return "apis/" + gv
	}
	return "api/" + gv
}

func servedRoots(ops map[servedOp]bool) []string {
	var out []string
	for op := range ops {
		if root := rootOf(op.gv); !slices.Contains(out, root) {
			out = append(out, root)
		}
	}
	sort.Strings(out)
	return out
}

func assertSameOps(t *testing.T, aName string, a map[servedOp]bool, bName string, b map[servedOp]bool) {
	t.Helper()
	report := func(from string, x map[servedOp]bool, to string, y map[servedOp]bool) {
		var missing []string
		for op := range x {
			if !y[op] {
				missing = append(missing, op.String())
			}
		}
		sort.Strings(missing)
		for _, m := range missing {
			t.Errorf("%s has %s, %s has not", from, m, to)
		}
	}
	report(aName, a, bName, b)
	report(bName, b, aName, a)
	if len(a) == 0 {
		t.Errorf("%s is empty", aName)
	}
}

func getJSON(t *testing.T, env *testEnv, path string, into interface{}) {
	t.Helper()
	data, err := env.client.Discovery().RESTClient().Get().AbsPath(path).SetHeader("Accept", "application/json").DoRaw(env.ctx)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}
