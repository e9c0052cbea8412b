package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"

	"github.com/batchlet/batchlet/pki"
)

// Issue 12's cluster objects: what upstream tooling assumes every cluster
// has, driven with the real kubectl.

// TestAuthWhoAmICanIAndVersion: `kubectl auth whoami` names the admin,
// `kubectl auth can-i` answers yes through the authorizer, and /version is
// the 1.34 batchlet implements.
func TestAuthWhoAmICanIAndVersion(t *testing.T) {
	s := startServer(t)
	if got := s.kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"); got != `kubernetes-admin ["system:masters","system:authenticated"]` {
		t.Errorf("whoami = %q", got)
	}
	for _, args := range [][]string{{"create", "jobs"}, {"delete", "jobsets.jobset.x-k8s.io", "-n", "kube-system"}, {"get", "/healthz"}} {
		if got := strings.TrimSpace(s.kubectl(append([]string{"auth", "can-i"}, args...)...)); got != "yes" {
			t.Errorf("can-i %v = %q, want yes", args, got)
		}
	}
	if got := s.kubectl("auth", "can-i", "--list"); !strings.Contains(got, "*.*") {
		t.Errorf("can-i --list does not list *.*:\n%s", got)
	}
	var v struct {
		Client struct{ GitVersion string }               `json:"clientVersion"`
		Server struct{ Major, Minor, GitVersion string } `json:"serverVersion"`
	}
	// The output may end with kubectl's skew warning (stderr): decode the
	// JSON value before it.
	if err := json.NewDecoder(strings.NewReader(s.kubectl("version", "-o", "json"))).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if v.Server.Major != "1" || v.Server.Minor != "34" || v.Server.GitVersion != "v1.34.0+batchlet" {
		t.Errorf("server version = %+v, want 1.34 v1.34.0+batchlet", v.Server)
	}
	// kubectl warns only when its minor version is more than one away from
	// the server's: check it reads the server as 1.34.
	out := s.kubectl("version")
	var clientMinor int
	if _, err := fmt.Sscanf(v.Client.GitVersion, "v1.%d.", &clientMinor); err != nil {
		t.Fatalf("client version %q: %v", v.Client.GitVersion, err)
	}
	skewed := clientMinor < 33 || clientMinor > 35
	wantWarning := fmt.Sprintf("WARNING: version difference between client (1.%d) and server (1.34) exceeds the supported minor version skew of +/-1", clientMinor)
	if got := strings.Contains(out, wantWarning); got != skewed || (!skewed && strings.Contains(out, "WARNING")) {
		t.Errorf("kubectl %s version output:\n%s\nwant the skew warning: %v", v.Client.GitVersion, out, skewed)
	}
}

// TestKubernetesServiceAndClusterIPs: default/kubernetes points at the
// server; Services get ClusterIPs from 10.96.0.0/12, refused as upstream
// refuses them, kept across restarts and freed on delete.
func TestKubernetesServiceAndClusterIPs(t *testing.T) {
	s := startServer(t)
	s.waitKubernetesService(t)
	if got := s.jsonpath("svc/kubernetes", "{.spec.clusterIP} {.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort} {.metadata.labels.component}"); got != fmt.Sprintf("10.96.0.1 https 443 %d apiserver", s.port) {
		t.Errorf("kubernetes service = %q", got)
	}
	want := fmt.Sprintf("127.0.0.1 %d", s.port)
	eventually(t, 30*time.Second, "kubernetes endpoints and endpointslice", func() bool {
		return s.jsonpath("endpoints/kubernetes", "{.subsets[0].addresses[0].ip} {.subsets[0].ports[0].port}") == want &&
			s.jsonpath("endpointslices/kubernetes", "{.endpoints[0].addresses[0]} {.ports[0].port}") == want
	})

	s.kubectl("create", "service", "clusterip", "a", "--tcp=80:8080")
	s.kubectl("create", "service", "clusterip", "b", "--tcp=80:8080")
	s.kubectl("create", "service", "clusterip", "headless", "--clusterip=None")
	if got := s.jsonpath("svc", `{range .items[*]}{.metadata.name}={.spec.clusterIP} {end}`); got != "a=10.96.1.1 b=10.96.1.2 headless=None kubernetes=10.96.0.1" {
		t.Errorf("cluster IPs = %q", got)
	}
	for ip, want := range map[string]string{
		"10.96.1.1": `spec.clusterIPs: Invalid value: ["10.96.1.1"]: failed to allocate IP 10.96.1.1: provided IP is already allocated`,
		"10.0.0.1":  `spec.clusterIPs: Invalid value: ["10.0.0.1"]: failed to allocate IP 10.0.0.1: provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12`,
	} {
		out, err := s.kubectlErr("create", "service", "clusterip", "c", "--tcp=80", "--clusterip="+ip)
		if err == nil || !strings.Contains(out, `Service "c" is invalid: `+want) {
			t.Errorf("create with clusterIP %s: err=%v\n%s\nwant %s", ip, err, out, want)
		}
	}

	// The deleted kubernetes Service comes back with the same address.
	s.kubectl("delete", "svc", "kubernetes")
	s.waitKubernetesService(t)

	// Allocations are the stored Services: kept across a restart, freed by
	// a delete.
	s.stop()
	s.start()
	s.kubectl("create", "service", "clusterip", "d", "--tcp=80")
	if got := s.jsonpath("svc/d", "{.spec.clusterIP}"); got != "10.96.1.3" {
		t.Errorf("after restart, d got %q, want 10.96.1.3", got)
	}
	s.kubectl("delete", "svc", "a")
	s.kubectl("create", "service", "clusterip", "c", "--tcp=80", "--clusterip=10.96.1.1")
}

// waitKubernetesService waits until default/kubernetes exists with the
// first address of the service CIDR.
func (s *server) waitKubernetesService(t *testing.T) {
	t.Helper()
	eventually(t, 30*time.Second, "service default/kubernetes", func() bool {
		return s.jsonpath("svc/kubernetes", "{.spec.clusterIP}") == "10.96.0.1"
	})
}

// TestRootCAConfigMapPublished: every namespace gets kube-root-ca.crt with
// the server's CA, put back when deleted or edited.
func TestRootCAConfigMapPublished(t *testing.T) {
	s := startServer(t)
	caPEM, err := os.ReadFile(filepath.Join(s.dataDir, pki.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	const description = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
	published := func(ns string) bool {
		out, err := s.kubectlErr("get", "configmap", "kube-root-ca.crt", "-n", ns, "-o", "json")
		if err != nil {
			return false
		}
		var cm corev1.ConfigMap
		return json.Unmarshal([]byte(out), &cm) == nil && cm.Data["ca.crt"] == string(caPEM) &&
			cm.Annotations["kubernetes.io/description"] == description && len(cm.Data) == 1
	}
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		eventually(t, 30*time.Second, "kube-root-ca.crt in "+ns, func() bool { return published(ns) })
	}
	s.kubectl("create", "namespace", "team")
	eventually(t, 30*time.Second, "kube-root-ca.crt in a new namespace", func() bool { return published("team") })

	s.kubectl("delete", "configmap", "kube-root-ca.crt", "-n", "team")
	eventually(t, 30*time.Second, "deleted kube-root-ca.crt back", func() bool { return published("team") })

	s.kubectl("patch", "configmap", "kube-root-ca.crt", "-n", "team", "-p", `{"data":{"ca.crt":"tampered","extra":"x"}}`)
	eventually(t, 30*time.Second, "edited kube-root-ca.crt restored", func() bool { return published("team") })
}

// TestJobSetEventsNotAggregated: as upstream JobSet (events.k8s.io/v1
// through client-go's tools/events), each restart writes its own
// RestartJobSetFailurePolicyAction Event, and each change of the
// Restarting condition its own FailurePolicy_* or JobsReady Event, none
// folded into a count.
func TestJobSetEventsNotAggregated(t *testing.T) {
	s := startServer(t)
	c := s.inNamespace(t, "jsevents")
	const js = "restartjobset-action-example"
	c.apply(fastLeader(t, "jobset-restartjobset-action-example.yaml", "4"))
	eventually(t, 3*jobSetTimeout, "jobset Failed", func() bool { return c.cond(js, "Failed", "status") == "True" })

	// Events are written asynchronously by the controller's broadcaster,
	// which retries a failed write after up to 10 s: wait until every
	// expected one is there before judging them.
	// One RestartJobSetFailurePolicyAction per restart. FailurePolicy_*
	// and JobsReady are the Restarting condition's events, written (as
	// upstream's) only when the condition changes: a restart whose Jobs
	// never all got ready before the leader failed again leaves the
	// condition True, so the next restart writes no FailurePolicy_* and
	// that attempt no JobsReady. They alternate: as many of each, or one
	// FailurePolicy_* more.
	const restarts = 3
	var list eventsv1.EventList
	rows := map[string]int{}
	read := func() {
		list = eventsv1.EventList{}
		if err := json.Unmarshal([]byte(c.k("get", "events.v1.events.k8s.io", "--field-selector", "regarding.name="+js, "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		rows = map[string]int{}
		for _, ev := range list.Items {
			rows[ev.Reason]++
		}
	}
	const policy = "FailurePolicy_failurePolicyRule0"
	complete := func() bool {
		read()
		return rows["RestartJobSetFailurePolicyAction"] >= restarts && rows["ReachedMaxRestarts"] >= 1 &&
			rows[policy] == restarts && rows["JobsReady"] >= restarts
	}
	deadline := time.Now().Add(30 * time.Second)
	for !complete() && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	for _, ev := range list.Items {
		if ev.Series != nil || ev.DeprecatedCount > 1 || ev.ReportingController != "jobset" || ev.Action != "Reconciling" {
			t.Errorf("event %s %s: series %+v, count %d, reportingController %q, action %q; want its own event from jobset, Reconciling",
				ev.Name, ev.Reason, ev.Series, ev.DeprecatedCount, ev.ReportingController, ev.Action)
		}
	}
	if rows["RestartJobSetFailurePolicyAction"] != restarts || rows["ReachedMaxRestarts"] != 1 {
		t.Errorf("events %v, want %d RestartJobSetFailurePolicyAction and 1 ReachedMaxRestarts", rows, restarts)
	}
	if n, ready := rows[policy], rows["JobsReady"]; n < 1 || n > restarts || ready < 1 || (n != ready && n != ready+1) {
		t.Errorf("%d %s and %d JobsReady events, want 1-%d of each, alternating (all: %v)", n, policy, ready, restarts, rows)
	}
	// kubectl shows each row with count 1.
	for _, line := range strings.Split(strings.TrimSpace(c.k("get", "events", "--field-selector", "involvedObject.name="+js, "-o", "custom-columns=REASON:.reason,COUNT:.count", "--no-headers")), "\n") {
		if f := strings.Fields(line); len(f) != 2 || (f[1] != "<none>" && f[1] != "1") {
			t.Errorf("kubectl get events row %q, want count 1 or none", line)
		}
	}
}

// ssaJob is a suspended Job (no pods) named name with label a=value.
func ssaJob(name, value string) string {
	return `apiVersion: batch/v1
kind: Job
metadata:
  name: ` + name + `
  labels: {a: "` + value + `"}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["true"]
`
}

// TestServerSideApplyWithKubectl: kubectl apply --server-side records
// managedFields, re-applies after controller writes, takes over a
// client-side-applied Job, conflicts with another manager unless forced,
// and --dry-run=server writes nothing.
func TestServerSideApplyWithKubectl(t *testing.T) {
	s := startServer(t)
	apply := func(manifest string, args ...string) (string, error) {
		return s.kubectlStdin(manifest, append([]string{"apply", "--server-side", "-f", "-"}, args...)...)
	}
	mustApply := func(manifest string, args ...string) {
		t.Helper()
		if out, err := apply(manifest, args...); err != nil {
			t.Fatalf("apply --server-side %v: %v\n%s", args, err, out)
		}
	}
	managers := func(job string) string {
		return strings.TrimSpace(s.kubectl("get", "job", job, "--show-managed-fields", "-o", `jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation} {end}`))
	}

	mustApply(ssaJob("ssa", "1"))
	if got := managers("ssa"); got != "kubectl/Apply" {
		t.Errorf("managedFields after apply = %q, want kubectl/Apply", got)
	}
	// The Job controller writes the Job (Suspended) without managedFields;
	// the applier still owns its fields.
	s.waitCondition("job/ssa", "suspended", jobSetTimeout)
	mustApply(ssaJob("ssa", "2"))
	if got := s.jsonpath("job/ssa", "{.metadata.labels.a}"); got != "2" {
		t.Errorf("label after re-apply = %q, want 2", got)
	}

	// A client-side-applied Job is taken over (upstream's upgrade path),
	// its server-set selector kept.
	if out, err := s.kubectlStdin(ssaJob("csa", "1"), "apply", "-f", "-"); err != nil {
		t.Fatalf("client-side apply: %v\n%s", err, out)
	}
	if out, err := apply(ssaJob("csa", "2")); err != nil || strings.Contains(out, "Warning") {
		t.Fatalf("server-side apply over client-side apply: %v\n%s", err, out)
	}
	if got := s.jsonpath("job/csa", "{.metadata.labels.a} {.spec.selector.matchLabels}"); !strings.HasPrefix(got, "2 {") {
		t.Errorf("label and selector after takeover = %q", got)
	}
	s.kubectl("label", "job", "csa", "a=3", "--overwrite")
	out, err := apply(ssaJob("csa", "4"))
	if want := `Apply failed with 1 conflict: conflict with "kubectl-label" using batch/v1: .metadata.labels.a`; err == nil || !strings.Contains(out, want) {
		t.Errorf("conflicting apply: err=%v\n%s\nwant %q", err, out, want)
	}
	mustApply(ssaJob("csa", "4"), "--force-conflicts")
	if got := s.jsonpath("job/csa", "{.metadata.labels.a}"); got != "4" {
		t.Errorf("label after --force-conflicts = %q, want 4", got)
	}

	mustApply(ssaJob("ssa", "5"), "--dry-run=server")
	mustApply(ssaJob("dry", "1"), "--dry-run=server")
	if got := s.jsonpath("job/ssa", "{.metadata.labels.a}"); got != "2" {
		t.Errorf("after dry-run, ssa's label = %q, want 2", got)
	}
	if out, err := s.kubectlErr("get", "job", "dry"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("dry-run create stored the Job: %v\n%s", err, out)
	}
}

// TestNodeProxy: nodes/NAME/proxy/PATH reaches the node's agent, as
// kube-apiserver's node proxy reaches the kubelet: upstream's e2e framework
// dumps /pods through it after a failure.
func TestNodeProxy(t *testing.T) {
	s := startServer(t)
	s.kubectl("run", "proxied", "--image=busybox", "--restart=Never", "--command", "--", "sleep", "300")
	s.kubectl("wait", "--for=condition=Ready", "pod/proxied", "--timeout=60s")
	node := s.jsonpath("pod/proxied", "{.spec.nodeName}")
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	out := s.kubectl("get", "--raw", "/api/v1/nodes/"+node+"/proxy/pods")
	if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "PodList" || len(list.Items) != 1 || list.Items[0].Metadata.Name != "proxied" {
		t.Errorf("nodes/%s/proxy/pods = %v %q", node, err, out)
	}
	if got := s.kubectl("get", "--raw", "/api/v1/nodes/"+node+"/proxy/healthz"); got != "ok" {
		t.Errorf("nodes/%s/proxy/healthz = %q", node, got)
	}
	if out, err := s.kubectlErr("get", "--raw", "/api/v1/nodes/no-such-node/proxy/pods"); err == nil || !strings.Contains(out, `nodes "no-such-node" not found`) {
		t.Errorf("proxy to a missing node: %v %q", err, out)
	}
}
