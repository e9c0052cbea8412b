package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

const crontabCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"crontabs.stable.example.com"},
"spec":{"group":"stable.example.com","scope":"Namespaced",
 "names":{"plural":"crontabs","singular":"crontab","kind":"CronTab","shortNames":["ct"]},
 "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
  "additionalPrinterColumns":[{"name":"Spec","type":"string","jsonPath":".spec.cronSpec"}],
  "schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object","properties":{"cronSpec":{"type":"string"},"replicas":{"type":"integer","minimum":1,"default":1}}},
   "status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}]}}`

func TestCRDEstablishedAndConflict(t *testing.T) {
	e := newTestEnv(t)
	crd := e.createCRD(t, crontabCRD)
	if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) || !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.NamesAccepted) {
		t.Fatalf("conditions = %+v, want NamesAccepted and Established", crd.Status.Conditions)
	}
	// Another CRD of the group asking for the same kind: NamesAccepted False.
	other := strings.NewReplacer("crontabs.stable", "crontabs2.stable", `"plural":"crontabs"`, `"plural":"crontabs2"`,
		`"singular":"crontab"`, `"singular":"crontab2"`, `"shortNames":["ct"]`, `"shortNames":["ct2"]`).Replace(crontabCRD)
	crd2 := e.createCRD(t, other)
	c := apihelpers.FindCRDCondition(crd2, apiextensionsv1.NamesAccepted)
	if c == nil || c.Status != apiextensionsv1.ConditionFalse || c.Reason != "ListKindConflict" || c.Message != `"CronTabList" is already in use` {
		t.Fatalf("NamesAccepted = %+v, want False ListKindConflict", c)
	}
	if apihelpers.IsCRDConditionTrue(crd2, apiextensionsv1.Established) {
		t.Fatal("conflicting CRD established")
	}
	// A CRD claiming a built-in's names in its group.
	builtin := strings.NewReplacer(`"name":"crontabs.stable.example.com"`, `"name":"leases.coordination.k8s.io","annotations":{"api-approved.kubernetes.io":"unapproved, test"}`,
		`"group":"stable.example.com"`, `"group":"coordination.k8s.io"`,
		`"plural":"crontabs"`, `"plural":"leases"`, `"singular":"crontab"`, `"singular":"lease"`, `"kind":"CronTab"`, `"kind":"Lease"`).Replace(crontabCRD)
	crd3 := e.createCRD(t, builtin)
	if c := apihelpers.FindCRDCondition(crd3, apiextensionsv1.NamesAccepted); c == nil || c.Status != apiextensionsv1.ConditionFalse || c.Reason != "ListKindConflict" {
		t.Fatalf("NamesAccepted of leases.coordination.k8s.io = %+v, want False", c)
	}
}

func TestCRDWebhookConversionRefused(t *testing.T) {
	e := newTestEnv(t)
	body := strings.Replace(crontabCRD, `"scope":"Namespaced",`, `"scope":"Namespaced","conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"https://example.com/convert"}}},`, 1)
	code, data := e.do(t, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", "application/json", []byte(body), testToken)
	st := decodeStatus(t, data)
	if code != http.StatusUnprocessableEntity || !strings.Contains(st.Message, "spec.conversion.strategy: Invalid value: \"Webhook\": webhook conversion is not supported yet by batchlet server") {
		t.Fatalf("create = %d %s", code, st.Message)
	}
}

func TestCustomResourceServerSideApply(t *testing.T) {
	e := newTestEnv(t)
	e.createCRD(t, crontabCRD)
	body := `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a"},"spec":{"cronSpec":"* * * * *","bogus":1}}`
	code, data := e.do(t, http.MethodPatch, "/apis/stable.example.com/v1/namespaces/default/crontabs/a?fieldManager=test", "", "application/apply-patch+yaml", []byte(body), testToken)
	if code != http.StatusCreated {
		t.Fatalf("apply: %d %s", code, data)
	}
	if !strings.Contains(string(data), `"replicas":1`) || strings.Contains(string(data), "bogus") {
		t.Fatalf("applied object not defaulted and pruned: %s", data)
	}
}

func TestCustomResourceListAndDelete(t *testing.T) {
	e := newTestEnv(t)
	e.createCRD(t, crontabCRD)
	for _, name := range []string{"a", "b"} {
		body := `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"` + name + `"},"spec":{"cronSpec":"* * * * *"}}`
		if code, data := e.do(t, http.MethodPost, "/apis/stable.example.com/v1/namespaces/default/crontabs", "", "application/json", []byte(body), testToken); code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, code, data)
		}
	}
	code, data := e.do(t, http.MethodGet, "/apis/stable.example.com/v1/crontabs?fieldSelector=metadata.name%3Db", "", "", nil, testToken)
	var list struct {
		APIVersion, Kind string
		Items            []map[string]interface{}
	}
	if err := json.Unmarshal(data, &list); code != http.StatusOK || err != nil {
		t.Fatalf("list: %d %v %s", code, err, data)
	}
	if list.Kind != "CronTabList" || list.APIVersion != "stable.example.com/v1" || len(list.Items) != 1 || list.Items[0]["kind"] != "CronTab" {
		t.Fatalf("list = %s", data)
	}
	if code, data := e.do(t, http.MethodDelete, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com", "", "", nil, testToken); code != http.StatusOK {
		t.Fatalf("delete CRD: %d %s", code, data)
	}
	if code, _ := e.do(t, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com", "", "", nil, testToken); code != http.StatusNotFound {
		t.Fatalf("CRD after delete: %d, want 404", code)
	}
	if code, _ := e.do(t, http.MethodGet, "/apis/stable.example.com/v1/namespaces/default/crontabs/a", "", "", nil, testToken); code != http.StatusNotFound {
		t.Fatalf("custom resource after CRD delete: %d, want 404", code)
	}
	if _, err := e.store.Get(e.ctx, "/registry/stable.example.com/crontabs/default/a"); err == nil {
		t.Fatal("custom resource still stored after its CRD was deleted")
	}
}

// A CRD whose objects are still finalizing stays Terminating, refuses new
// objects, and goes once the last finalizer is removed.
func TestCRDTerminatingWaitsForFinalizers(t *testing.T) {
	e := newTestEnv(t)
	e.createCRD(t, crontabCRD)
	const base = "/apis/stable.example.com/v1/namespaces/default/crontabs"
	body := `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"held","finalizers":["example.com/hold"]},"spec":{"cronSpec":"* * * * *"}}`
	if code, data := e.do(t, http.MethodPost, base, "", "application/json", []byte(body), testToken); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, data)
	}
	if code, data := e.do(t, http.MethodDelete, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com", "", "", nil, testToken); code != http.StatusOK {
		t.Fatalf("delete CRD: %d %s", code, data)
	}
	_, data := e.do(t, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com", "", "", nil, testToken)
	var crd apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	c := apihelpers.FindCRDCondition(&crd, apiextensionsv1.Terminating)
	if c == nil || c.Status != apiextensionsv1.ConditionTrue || c.Reason != "InstanceDeletionInProgress" || !apihelpers.CRDHasFinalizer(&crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
		t.Fatalf("terminating CRD: condition %+v finalizers %v", c, crd.Finalizers)
	}
	other := strings.Replace(body, `"held"`, `"new"`, 1)
	code, data := e.do(t, http.MethodPost, base, "", "application/json", []byte(other), testToken)
	if st := decodeStatus(t, data); code != http.StatusForbidden || !strings.Contains(st.Message, "create not allowed while custom resource definition is terminating") {
		t.Fatalf("create while terminating: %d %s", code, st.Message)
	}
	patch := `{"metadata":{"finalizers":null}}`
	if code, data := e.do(t, http.MethodPatch, base+"/held", "", "application/merge-patch+json", []byte(patch), testToken); code != http.StatusOK {
		t.Fatalf("drop finalizer: %d %s", code, data)
	}
	e.srv.crds.Sync(e.ctx) // what the CRD loop does on its next pass
	if code, _ := e.do(t, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com", "", "", nil, testToken); code != http.StatusNotFound {
		t.Fatalf("CRD after its last object went: %d, want 404", code)
	}
}

func TestCustomResourceSelectableFields(t *testing.T) {
	e := newTestEnv(t)
	e.createCRD(t, strings.Replace(crontabCRD, `"subresources":{"status":{}},`, `"subresources":{"status":{}},"selectableFields":[{"jsonPath":".spec.cronSpec"}],`, 1))
	for name, spec := range map[string]string{"a": "1 * * * *", "b": "2 * * * *"} {
		body := `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"` + name + `"},"spec":{"cronSpec":"` + spec + `"}}`
		if code, data := e.do(t, http.MethodPost, "/apis/stable.example.com/v1/namespaces/default/crontabs", "", "application/json", []byte(body), testToken); code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, code, data)
		}
	}
	code, data := e.do(t, http.MethodGet, "/apis/stable.example.com/v1/crontabs?fieldSelector=spec.cronSpec%3D2+*+*+*+*", "", "", nil, testToken)
	if code != http.StatusOK || !strings.Contains(string(data), `"name":"b"`) || strings.Contains(string(data), `"name":"a"`) {
		t.Fatalf("list by spec.cronSpec: %d %s", code, data)
	}
	code, data = e.do(t, http.MethodGet, "/apis/stable.example.com/v1/crontabs?fieldSelector=spec.image%3Dx", "", "", nil, testToken)
	if st := decodeStatus(t, data); code != http.StatusBadRequest || st.Message != "field label not supported: spec.image" {
		t.Fatalf("list by an unselectable field: %d %s", code, st.Message)
	}
}

// createCRD posts a CRD and returns it as stored after the sync.
func (e *testEnv) createCRD(t *testing.T, body string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	code, data := e.do(t, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", "application/json", []byte(body), testToken)
	if code != http.StatusCreated {
		t.Fatalf("create CRD: %d %s", code, data)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	code, data = e.do(t, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+crd.Name, "", "", nil, testToken)
	if code != http.StatusOK {
		t.Fatalf("get CRD: %d %s", code, data)
	}
	if err := json.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	return &crd
}
