package install

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

func TestCRDNamesJobSet(t *testing.T) {
	all, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range all {
		names = append(names, c.GetName())
	}
	if want := []string{"jobsets.jobset.x-k8s.io", "containerresults.results.batchlet.dev", "workqueues.batchlet.dev"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("CRDs = %v, want %v", names, want)
	}
	crds := all[:1]
	versions, _, _ := unstructured.NestedSlice(crds[0].Object, "spec", "versions")
	if len(versions) != 1 {
		t.Fatalf("versions = %d, want 1", len(versions))
	}
	v := versions[0].(map[string]any)
	if v["name"] != "v1alpha2" || v["served"] != true || v["storage"] != true {
		t.Errorf("version = %v %v %v, want v1alpha2 served storage", v["name"], v["served"], v["storage"])
	}
	if _, ok, _ := unstructured.NestedMap(v, "subresources", "status"); !ok {
		t.Error("the status subresource is not enabled")
	}
}

// TestCRDSchemaCoversGoTypes catches a JobSet module bump without
// hack/update-crds.sh: every JSON field of the Go types must be in the
// schema, or the API server would prune it.
func TestCRDSchemaCoversGoTypes(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crds[0].Object, "spec", "versions")
	schemaRoot, _, _ := unstructured.NestedMap(versions[0].(map[string]any), "schema", "openAPIV3Schema")
	var missing []string
	walkFields(reflect.TypeOf(jobsetv1alpha2.JobSet{}), schemaRoot, "", 0, &missing)
	if len(missing) > 0 {
		t.Errorf("fields of the Go types missing from the CRD schema (run hack/update-crds.sh):\n%s", strings.Join(missing, "\n"))
	}
}

// walkFields checks that each JSON field of t is a property of schema and
// recurses into struct, slice and map element types. Apimachinery's own
// types (ObjectMeta, Time, Quantity, IntOrString) are opaque here.
func walkFields(t reflect.Type, schema map[string]any, path string, depth int, missing *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		if items, ok := schema["items"].(map[string]any); ok {
			walkFields(t.Elem(), items, path+"[]", depth+1, missing)
		}
		return
	case reflect.Map:
		if values, ok := schema["additionalProperties"].(map[string]any); ok {
			walkFields(t.Elem(), values, path+"{}", depth+1, missing)
		}
		return
	case reflect.Struct:
	default:
		return
	}
	if depth > 40 || strings.HasPrefix(t.PkgPath(), "k8s.io/apimachinery/") {
		return
	}
	props, _ := schema["properties"].(map[string]any)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, inline := jsonName(f)
		if name == "-" || !f.IsExported() {
			continue
		}
		if inline {
			walkFields(f.Type, schema, path, depth, missing)
			continue
		}
		sub, ok := props[name].(map[string]any)
		if !ok {
			*missing = append(*missing, path+"."+name)
			continue
		}
		walkFields(f.Type, sub, path+"."+name, depth+1, missing)
	}
}

func jsonName(f reflect.StructField) (name string, inline bool) {
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if strings.Contains(opts, "inline") || (f.Anonymous && name == "") {
		return "", true
	}
	if name == "" {
		name = f.Name
	}
	return name, false
}

func TestObjectsGrantEachControllerItsRules(t *testing.T) {
	objs, err := Objects(Options{Namespace: "ops", Controllers: []string{"jobset", "job"}, SkipCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetLabels()[ManagedByLabel] != "batchlet" {
			t.Errorf("%s has no %s label", describe(o), ManagedByLabel)
		}
		if o.GetKind() == "ClusterRole" && o.GetName() == ResultsViewName {
			if o.GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"] != "true" {
				t.Errorf("%s does not aggregate to view", ResultsViewName)
			}
		} else if o.GetKind() == "ClusterRole" {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]int{"Namespace": 1, "ServiceAccount": 1, "ClusterRole": 2, "ClusterRoleBinding": 1, "Role": 1, "RoleBinding": 1}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds = %v, want %v", kinds, want)
	}
	for _, need := range []struct{ group, resource, verb string }{
		{"jobset.x-k8s.io", "jobsets/status", "update"},
		{"batch", "jobs/finalizers", "update"},
		{"", "pods", "create"},
		{"", "services", "create"},
		{"", "events", "create"},
		{"events.k8s.io", "events", "create"},
	} {
		if !allows(role.Rules, need.group, need.resource, need.verb) {
			t.Errorf("ClusterRole does not allow %s %s/%s", need.verb, need.group, need.resource)
		}
	}
	if allows(role.Rules, "", "secrets", "get") {
		t.Error("ClusterRole for job,jobset allows reading secrets")
	}
}

func TestObjectsRefuseUnknownController(t *testing.T) {
	_, err := Objects(Options{Namespace: "ops", Controllers: []string{"jobz"}})
	if err == nil || !strings.Contains(err.Error(), `unknown controller "jobz"`) {
		t.Fatalf("err = %v, want unknown controller", err)
	}
}

func TestDeploymentRunsLeaderElectedControllers(t *testing.T) {
	certs, err := NewWebhookCerts(t.TempDir(), []string{serviceHost("ops")})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(Options{Namespace: "ops", Controllers: []string{"jobset"}, SkipCRDs: true, Image: "example.com/batchlet:v1", Replicas: 2, Webhook: certs})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
		if o.GetKind() == "MutatingWebhookConfiguration" {
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			svc, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "service", "name")
			ca, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "caBundle")
			if svc != "batchlet-controllers-webhook" || ca == "" {
				t.Errorf("mutating webhook calls service %q with caBundle %q, want batchlet-controllers-webhook and the CA", svc, ca)
			}
		}
	}
	for _, k := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Service", "Secret"} {
		if !kinds[k] {
			t.Errorf("no %s among %v", k, kinds)
		}
	}
	var d *unstructured.Unstructured
	for i, o := range objs {
		if o.GetKind() == "Deployment" {
			d = o
			if k := objs[len(objs)-1].GetKind(); i != len(objs)-3 || k != "ValidatingWebhookConfiguration" {
				t.Errorf("the Deployment is object %d of %d, last %s; want it just before the webhook configurations", i, len(objs), k)
			}
		}
	}
	if d == nil {
		t.Fatal("no Deployment")
	}
	replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	args := strings.Join(toStrings(containers[0].(map[string]any)["args"]), " ")
	if replicas != 2 || !strings.Contains(args, "--leader-elect ") || !strings.Contains(args, "--controllers=jobset") || !strings.Contains(args, "--webhook-cert-dir=") {
		t.Errorf("replicas %d args %q, want 2 replicas running leader-elected jobset", replicas, args)
	}
}

// TestApplierKnowsEveryKind renders everything install can and checks the
// applier can map each kind to its resource.
func TestApplierKnowsEveryKind(t *testing.T) {
	certs, err := NewWebhookCerts(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{
		{Namespace: "ops", Controllers: knownControllers(), Agent: true, Image: "x/batchlet:v1", Webhook: certs},
		{Namespace: "ops", Controllers: []string{"jobset"}, WebhookURL: "https://127.0.0.1:9443", Webhook: certs},
	} {
		objs, err := Objects(opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if _, ok := resourceOf[o.GroupVersionKind().GroupKind()]; !ok {
				t.Errorf("the applier does not know %s", o.GroupVersionKind())
			}
		}
	}
}

func TestDeploymentOfJobSetNeedsWebhookCerts(t *testing.T) {
	_, err := Objects(Options{Namespace: "ops", Controllers: []string{"jobset"}, Image: "example.com/batchlet:v1"})
	if err == nil || !strings.Contains(err.Error(), "webhook needs certificates") {
		t.Fatalf("err = %v, want the webhook to need certificates", err)
	}
}

func TestApplierCreatesThenReplaces(t *testing.T) {
	scheme := runtime.NewScheme()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}: "CustomResourceDefinitionList",
	})
	// Play the API server: a CRD is Established once written (and an
	// update keeps the status, which the fake would drop).
	establish := func(action clienttesting.Action) (bool, runtime.Object, error) {
		obj := action.(interface{ GetObject() runtime.Object }).GetObject().(*unstructured.Unstructured)
		_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"type": "Established", "status": "True"}}, "status", "conditions")
		return false, nil, nil
	}
	client.PrependReactor("create", "customresourcedefinitions", establish)
	client.PrependReactor("update", "customresourcedefinitions", establish)
	objs, err := Objects(Options{Namespace: "ops", Controllers: []string{"jobset"}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	a := Applier{Client: client, Out: &out, EstablishTimeout: 5 * time.Second}
	if err := a.Apply(context.Background(), objs); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), " created\n"); got != len(objs) {
		t.Errorf("first apply created %d of %d objects:\n%s", got, len(objs), out.String())
	}
	if !strings.HasPrefix(out.String(), "customresourcedefinition.apiextensions.k8s.io/jobsets.jobset.x-k8s.io created\n") {
		t.Errorf("the CRD is not applied first:\n%s", out.String())
	}
	out.Reset()
	if err := a.Apply(context.Background(), objs); err != nil {
		t.Fatalf("second apply: %v", err)
	}
	if strings.Contains(out.String(), " created\n") {
		t.Errorf("second apply created objects again:\n%s", out.String())
	}
}

func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if has(r.APIGroups, group) && has(r.Resources, resource) && has(r.Verbs, verb) {
			return true
		}
	}
	return false
}

func has(list []string, s string) bool {
	for _, v := range list {
		if v == s || v == "*" {
			return true
		}
	}
	return false
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// TestDeploymentJobControllerMode: the Deployment runs the Job controller
// in the mode asked for (alongside beside kube-controller-manager's).
func TestDeploymentJobControllerMode(t *testing.T) {
	for _, mode := range []string{"", "alongside"} {
		objs, err := Objects(Options{Namespace: DefaultNamespace, Controllers: []string{"job"}, Image: "batchlet:dev", SkipCRDs: true, JobControllerMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() != "Deployment" {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			args := strings.Join(toStrings(containers[0].(map[string]any)["args"]), " ")
			if got := strings.Contains(args, "--job-controller-mode=alongside"); got != (mode == "alongside") {
				t.Errorf("mode %q: args %q", mode, args)
			}
		}
	}
}
