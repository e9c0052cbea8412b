package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func (e *testEnv) do(t *testing.T, method, path, accept, ctype string, body []byte, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, method, e.http.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func decodeStatus(t *testing.T, data []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(data, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status: %s", data)
	}
	return st
}

func TestUnauthenticatedRequestsAre401(t *testing.T) {
	e := newTestEnv(t)
	for _, tok := range []string{"", "wrong"} {
		code, body := e.do(t, "GET", "/api/v1/namespaces", "", "", nil, tok)
		st := decodeStatus(t, body)
		if code != 401 || st.Reason != metav1.StatusReasonUnauthorized || st.Message != "Unauthorized" {
			t.Fatalf("token %q: %d %s", tok, code, body)
		}
	}
	if code, _ := e.do(t, "GET", "/healthz", "", "", nil, ""); code != 200 {
		t.Fatalf("/healthz = %d", code)
	}
	if code, body := e.do(t, "GET", "/version", "", "", nil, ""); code != 200 || !strings.Contains(string(body), GitVersion) {
		t.Fatalf("/version = %d %s", code, body)
	}
}

func TestBadInput(t *testing.T) {
	e := newTestEnv(t)
	big := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"` + strings.Repeat("x", 4<<20) + `"}}`)
	cases := []struct {
		name, method, path, ctype string
		body                      []byte
		code                      int
		reason                    metav1.StatusReason
	}{
		{"too large", "POST", "/api/v1/namespaces/default/configmaps", "application/json", big, 413, metav1.StatusReasonRequestEntityTooLarge},
		{"malformed json", "POST", "/api/v1/namespaces/default/configmaps", "application/json", []byte(`{"apiVersion":`), 400, metav1.StatusReasonBadRequest},
		{"malformed yaml", "POST", "/api/v1/namespaces/default/configmaps", "application/yaml", []byte("a: [b"), 400, metav1.StatusReasonBadRequest},
		{"kind mismatch", "POST", "/api/v1/namespaces/default/configmaps", "application/json", []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`), 400, metav1.StatusReasonBadRequest},
		{"version mismatch", "POST", "/apis/batch/v1/namespaces/default/jobs", "application/json", []byte(`{"apiVersion":"v1","kind":"Job","metadata":{"name":"s"}}`), 400, metav1.StatusReasonBadRequest},
		{"unknown resource", "GET", "/api/v1/namespaces/default/widgets", "", nil, 404, metav1.StatusReasonNotFound},
		{"unknown group", "GET", "/apis/example.com/v1/widgets", "", nil, 404, metav1.StatusReasonNotFound},
		{"invalid name", "POST", "/api/v1/namespaces/default/configmaps", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}`), 422, metav1.StatusReasonInvalid},
		{"missing namespace", "POST", "/api/v1/namespaces/nope/configmaps", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`), 404, metav1.StatusReasonNotFound},
		{"invalid job", "POST", "/apis/batch/v1/namespaces/default/jobs", "application/json", []byte(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"bad"},"spec":{"template":{"spec":{"containers":[]}}}}`), 422, metav1.StatusReasonInvalid},
		{"bad selector", "GET", "/api/v1/pods?labelSelector=a%20in%20(", "", nil, 400, metav1.StatusReasonBadRequest},
	}
	for _, c := range cases {
		code, body := e.do(t, c.method, c.path, "", c.ctype, c.body, testToken)
		st := decodeStatus(t, body)
		if code != c.code || st.Reason != c.reason || int(st.Code) != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, code, body, c.code, c.reason)
		}
	}
	cms, err := e.client.CoreV1().ConfigMaps("default").List(e.ctx, metav1.ListOptions{})
	if err != nil || len(cms.Items) != 0 {
		t.Fatalf("bad input changed something: %v %v", cms, err)
	}
	_, err = e.client.CoreV1().ConfigMaps("default").Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "a lowercase RFC 1123 subdomain must consist of") {
		t.Fatalf("invalid name: %v", err)
	}
}

func TestInvalidJobIs422WithCauses(t *testing.T) {
	e := newTestEnv(t)
	job := testJob("bad")
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	_, err := e.client.BatchV1().Jobs("default").Create(e.ctx, job, metav1.CreateOptions{})
	var se *apierrors.StatusError
	if !apierrors.IsInvalid(err) || !errorsAs(err, &se) || se.ErrStatus.Details == nil || len(se.ErrStatus.Details.Causes) == 0 {
		t.Fatalf("invalid job: %v", err)
	}
	if se.ErrStatus.Details.Kind != "Job" || se.ErrStatus.Details.Group != "batch" || se.ErrStatus.Details.Name != "bad" {
		t.Fatalf("details = %+v", se.ErrStatus.Details)
	}
}

func errorsAs(err error, se **apierrors.StatusError) bool {
	s, ok := err.(*apierrors.StatusError)
	*se = s
	return ok
}

func TestTables(t *testing.T) {
	e := newTestEnv(t)
	job := testJob("pi")
	if _, err := e.client.BatchV1().Jobs("default").Create(e.ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := testPod("p", "n1")
	if _, err := e.client.CoreV1().Pods("default").Create(e.ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	accept := "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	cases := []struct {
		path    string
		columns string
		cells   string
	}{
		{"/apis/batch/v1/namespaces/default/jobs", "[Name Status Completions Duration Age Containers Images Selector]", "[pi Running 0/1  0s main busybox"},
		{"/api/v1/namespaces/default/pods", "[Name Ready Status Restarts Age IP Node Nominated Node Readiness Gates]", "[p 0/1 Pending 0 0s <none> n1 <none> <none>]"},
		{"/api/v1/namespaces", "[Name Status Age]", "[default Active 0s]"},
	}
	for _, c := range cases {
		code, body := e.do(t, "GET", c.path, accept, "", nil, testToken)
		var tbl metav1.Table
		if err := json.Unmarshal(body, &tbl); err != nil || code != 200 || tbl.Kind != "Table" {
			t.Fatalf("%s: %d %s", c.path, code, body)
		}
		var cols []string
		for _, col := range tbl.ColumnDefinitions {
			cols = append(cols, col.Name)
		}
		if got := strings.Join(cols, " "); "["+got+"]" != c.columns {
			t.Errorf("%s columns = [%s], want %s", c.path, got, c.columns)
		}
		if len(tbl.Rows) == 0 {
			t.Fatalf("%s: no rows", c.path)
		}
		cells := strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(stringsOf(tbl.Rows[0].Cells), "\n", ""), "  ", " "), "  ", " "))
		if !strings.HasPrefix(cells, strings.ReplaceAll(c.cells, "  ", " ")) {
			t.Errorf("%s first row = %s, want prefix %s", c.path, cells, c.cells)
		}
		var meta metav1.PartialObjectMetadata
		if err := json.Unmarshal(tbl.Rows[0].Object.Raw, &meta); err != nil || meta.Kind != "PartialObjectMetadata" {
			t.Errorf("%s row object = %s", c.path, tbl.Rows[0].Object.Raw)
		}
	}
}

func stringsOf(cells []interface{}) string {
	parts := make([]string, len(cells))
	for i, c := range cells {
		switch v := c.(type) {
		case string:
			parts[i] = v
		case float64:
			parts[i] = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			b, _ := json.Marshal(v)
			parts[i] = string(b)
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestDiscovery(t *testing.T) {
	e := newTestEnv(t)
	lists, err := e.client.Discovery().ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]metav1.APIResource{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			found[l.GroupVersion+"/"+r.Name] = r
		}
	}
	checks := map[string]string{"v1/pods": "[po]", "v1/namespaces": "[ns]", "batch/v1/jobs": "[]", "jobset.x-k8s.io/v1alpha2/jobsets": "[]"}
	for k, short := range checks {
		r, ok := found[k]
		if !ok {
			t.Fatalf("%s not discovered", k)
		}
		if got := "[" + strings.Join(r.ShortNames, " ") + "]"; got != short {
			t.Errorf("%s shortNames = %s, want %s", k, got, short)
		}
	}
	if c := found["batch/v1/jobs"].Categories; len(c) != 1 || c[0] != "all" {
		t.Errorf("jobs categories = %v", c)
	}
	_, res, err := e.client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	hasEviction := false
	for _, l := range res {
		for _, r := range l.APIResources {
			if l.GroupVersion == "v1" && r.Name == "pods/eviction" && r.Group == "policy" && r.Kind == "Eviction" {
				hasEviction = true
			}
		}
	}
	if !hasEviction {
		t.Error("pods/eviction not discovered as policy/v1 Eviction")
	}
}

func TestBindingAndEviction(t *testing.T) {
	e := newTestEnv(t)
	pods := e.client.CoreV1().Pods("default")
	if _, err := pods.Create(e.ctx, testPod("p", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := pods.Bind(e.ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	got, err := pods.Get(e.ctx, "p", metav1.GetOptions{})
	if err != nil || got.Spec.NodeName != "n1" || !hasPodCondition(got, corev1.PodScheduled, "") {
		t.Fatalf("after bind: %+v %v", got.Spec.NodeName, err)
	}
	if err := pods.Bind(e.ctx, b, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("second bind: %v", err)
	}
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	if err := e.client.PolicyV1().Evictions("default").Evict(e.ctx, ev); err != nil {
		t.Fatalf("evict: %v", err)
	}
	got, err = pods.Get(e.ctx, "p", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || !hasPodCondition(got, corev1.DisruptionTarget, "EvictionByEvictionAPI") {
		t.Fatalf("after eviction: %+v %v", got.Status.Conditions, err)
	}
	for _, c := range got.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Message != "Eviction API: evicting" {
			t.Fatalf("message = %q", c.Message)
		}
	}
}

func hasPodCondition(p *corev1.Pod, t corev1.PodConditionType, reason string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue && (reason == "" || c.Reason == reason) {
			return true
		}
	}
	return false
}

// TestLogsProxiedToAgent checks pods/log reaches the node agent's
// containerLogs endpoint with the node token and the query passed on.
func TestLogsProxiedToAgent(t *testing.T) {
	var gotPath, gotAuth, gotQuery string
	agent := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth, gotQuery = r.URL.Path, r.Header.Get("Authorization"), r.URL.RawQuery
		_, _ = w.Write([]byte("3.14159\n"))
	}))
	defer agent.Close()
	u, _ := url.Parse(agent.URL)
	port, _ := strconv.Atoi(u.Port())
	e := newTestEnv(t)
	e.srv.nodes.Token = "node-token"
	e.trustAgent(agent)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	node, err := e.client.CoreV1().Nodes().Create(e.ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: u.Hostname()}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := e.client.CoreV1().Nodes().UpdateStatus(e.ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.CoreV1().Pods("default").Create(e.ctx, testPod("p", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tail := int64(5)
	out, err := e.client.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{TailLines: &tail, Previous: true}).DoRaw(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "3.14159\n" || gotPath != "/containerLogs/default/p/main" || gotAuth != "Bearer node-token" {
		t.Fatalf("logs %q path %q auth %q", out, gotPath, gotAuth)
	}
	if q, _ := url.ParseQuery(gotQuery); q.Get("tailLines") != "5" || q.Get("previous") != "true" {
		t.Fatalf("query = %q", gotQuery)
	}
}

func TestInProcessConfigCRUD(t *testing.T) {
	e := newTestEnv(t)
	client, err := newClientFor(e.srv)
	if err != nil {
		t.Fatal(err)
	}
	job, err := client.BatchV1().Jobs("default").Create(e.ctx, testJob("pi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Spec.Selector == nil || job.Spec.Template.Labels[batchv1.JobNameLabel] != "pi" {
		t.Fatalf("job not prepared: selector %v labels %v", job.Spec.Selector, job.Labels)
	}
	if _, err := client.BatchV1().Jobs("default").Get(e.ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("in-process get missing: %v", err)
	}
}

func TestFieldValidation(t *testing.T) {
	e := newTestEnv(t)
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"foo":"bar"}`)
	code, resp := e.do(t, "POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", "", "application/json", body, testToken)
	st := decodeStatus(t, resp)
	if code != 400 || st.Message != `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "foo"` {
		t.Fatalf("strict: %d %s", code, resp)
	}
	req, _ := http.NewRequest("POST", e.http.URL+"/api/v1/namespaces/default/configmaps?fieldValidation=Warn", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 201 || r.Header.Get("Warning") != `299 - "unknown field \"foo\""` {
		t.Fatalf("warn: %d %q", r.StatusCode, r.Header.Get("Warning"))
	}
}

func TestAggregatedDiscovery(t *testing.T) {
	e := newTestEnv(t)
	req, _ := http.NewRequestWithContext(e.ctx, "GET", e.http.URL+"/apis", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" {
		t.Fatalf("content type %q", ct)
	}
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`"name":"batch"`, `"resource":"jobs"`, `"name":"jobset.x-k8s.io"`, `"subresource":"status"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("aggregated /apis lacks %s", want)
		}
	}
}

// An invalid pod lists each problem once, as upstream's BeforeCreate does
// (the pod's validation makes the metadata checks itself).
func TestInvalidPodCausesListedOnce(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("Bad_Name", "")
	pod.Labels = map[string]string{"bad key!": "v"}
	_, err := e.client.CoreV1().Pods("default").Create(e.ctx, pod, metav1.CreateOptions{})
	var se *apierrors.StatusError
	if !apierrors.IsInvalid(err) || !errorsAs(err, &se) || se.ErrStatus.Details == nil {
		t.Fatalf("invalid pod: %v", err)
	}
	seen := map[string]bool{}
	for _, c := range se.ErrStatus.Details.Causes {
		k := c.Field + "|" + c.Message
		if seen[k] {
			t.Errorf("cause listed twice: %s: %s", c.Field, c.Message)
		}
		seen[k] = true
	}
	if !seen["metadata.name|Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"] {
		t.Errorf("causes %+v lack the metadata.name error", se.ErrStatus.Details.Causes)
	}
}

// TestBindingLeavesSharedVersionAlone: a binding builds the bound pod from
// the shared decoded copy of the current version, which watches and later
// reads of that version still get: it must not change.
func TestBindingLeavesSharedVersionAlone(t *testing.T) {
	e := newTestEnv(t)
	pods := e.client.CoreV1().Pods("default")
	p := testPod("p", "")
	p.Annotations = map[string]string{"a": "1"}
	created, err := pods.Create(e.ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}
	if created, err = pods.UpdateStatus(e.ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	res := e.srv.resource("", "v1", "pods")
	before, _, err := e.srv.objects.GetShared(e.ctx, res, "default", "p")
	if err != nil {
		t.Fatal(err)
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"b": "2"}}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := pods.Bind(e.ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	shared := before.(*corev1.Pod)
	if shared.Spec.NodeName != "" || len(shared.Annotations) != 1 || shared.Status.Conditions[0].Status != corev1.ConditionFalse {
		t.Fatalf("binding changed the shared version %s: node %q annotations %v conditions %+v",
			created.ResourceVersion, shared.Spec.NodeName, shared.Annotations, shared.Status.Conditions)
	}
	got, err := pods.Get(e.ctx, "p", metav1.GetOptions{})
	if err != nil || got.Spec.NodeName != "n1" || got.Annotations["a"] != "1" || got.Annotations["b"] != "2" || !hasPodCondition(got, corev1.PodScheduled, "") {
		t.Fatalf("bound pod: node %q annotations %v conditions %+v, %v", got.Spec.NodeName, got.Annotations, got.Status.Conditions, err)
	}
}

// pods/status cannot change owner references and keeps the QoS class a
// writer left out, as upstream's pod status strategy.
func TestPodStatusKeepsOwnersAndQOS(t *testing.T) {
	e := newTestEnv(t)
	pods := e.client.CoreV1().Pods("default")
	pod := testPod("owned", "n1")
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "ju"}}
	created, err := pods.Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.OwnerReferences = nil
	created.Status.QOSClass = ""
	created.Status.Phase = corev1.PodRunning
	got, err := pods.UpdateStatus(e.ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "ju" {
		t.Errorf("owner references = %v, want the Job's kept", got.OwnerReferences)
	}
	if got.Status.QOSClass != corev1.PodQOSBestEffort || got.Status.Phase != corev1.PodRunning {
		t.Errorf("status = %s/%s, want Running with QoS BestEffort kept", got.Status.Phase, got.Status.QOSClass)
	}
}
