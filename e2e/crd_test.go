package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cronTab is an object of the CronTab CRD (testdata/crontab-crd.yaml, the
// Kubernetes docs' example with a schema, a default, printer columns, a
// short name and the status subresource).
func cronTab(name, extraSpec string) string {
	return `apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: ` + name + `
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
` + extraSpec
}

// TestCustomResourceDefinition applies a CRD with kubectl and uses its
// custom resources as upstream serves them: established condition,
// pruning (and strict field validation refusing unknown fields), defaults,
// schema validation with upstream's 422, printer columns, the status
// subresource, watch, explain, and deletion of the CRD with its objects.
func TestCustomResourceDefinition(t *testing.T) {
	s := startServer(t)
	crdFile, err := filepath.Abs(filepath.Join("testdata", "crontab-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s.kubectl("apply", "-f", crdFile)
	s.kubectl("wait", "--for", "condition=established", "--timeout=60s", "crd/crontabs.stable.example.com")
	if got := s.jsonpath("crd/crontabs.stable.example.com", `{.status.conditions[?(@.type=="NamesAccepted")].reason}`); got != "NoConflicts" {
		t.Errorf("NamesAccepted reason = %q, want NoConflicts", got)
	}

	// kubectl apply validates strictly on the server: the unknown field
	// is refused; without validation it is pruned.
	out, err := s.kubectlStdin(cronTab("strict", "  unknownField: x\n"), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, `CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.unknownField"`) {
		t.Fatalf("apply with an unknown field: err=%v\n%s", err, out)
	}
	if out, err := s.kubectlStdin(cronTab("warned", "  unknownField: x\n"), "create", "--validate=warn", "-f", "-"); err != nil || !strings.Contains(out, `Warning: unknown field "spec.unknownField"`) {
		t.Fatalf("create --validate=warn: err=%v\n%s", err, out)
	}
	if out, err := s.kubectlStdin(cronTab("cron", "  unknownField: x\n"), "apply", "--validate=false", "-f", "-"); err != nil {
		t.Fatalf("apply --validate=false: %v\n%s", err, out)
	}
	if got := s.jsonpath("crontab/cron", "{.spec}"); got != `{"cronSpec":"* * * * */5","image":"my-awesome-cron-image","replicas":1}` {
		t.Errorf("spec = %s, want pruned and defaulted", got)
	}

	// Schema validation: upstream's 422 message.
	out, err = s.kubectlStdin(cronTab("toomany", "  replicas: 40\n"), "create", "-f", "-")
	if err == nil || !strings.Contains(out, `The CronTab "toomany" is invalid: spec.replicas: Invalid value: 40: spec.replicas in body should be less than or equal to 10`) {
		t.Fatalf("create with replicas 40: err=%v\n%s", err, out)
	}

	// Printer columns, through the short name.
	table := s.kubectl("get", "ct", "cron")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME SPEC REPLICAS AGE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "cron * * * * */5 1 ") {
		t.Errorf("kubectl get ct:\n%s", table)
	}

	// Status subresource: /status changes only the status, the main
	// resource ignores status changes and bumps the generation on spec ones.
	s.kubectl("patch", "crontab", "cron", "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":3},"spec":{"replicas":5}}`)
	if got := s.jsonpath("crontab/cron", "{.spec.replicas} {.status.replicas} {.metadata.generation}"); got != "1 3 1" {
		t.Errorf("after status patch: spec.replicas status.replicas generation = %q, want 1 3 1", got)
	}
	s.kubectl("patch", "crontab", "cron", "--type=merge", "-p", `{"status":{"replicas":7},"spec":{"replicas":4}}`)
	if got := s.jsonpath("crontab/cron", "{.spec.replicas} {.status.replicas} {.metadata.generation}"); got != "4 3 2" {
		t.Errorf("after main patch: spec.replicas status.replicas generation = %q, want 4 3 2", got)
	}

	// Watch: an update arrives as MODIFIED.
	w := s.watchLines("get", "crontabs", "--watch", "--output-watch-events", "-o", `jsonpath={.type} {.object.metadata.name} {.object.spec.image}{"\n"}`)
	eventually(t, 30*time.Second, "the watch's initial ADDED", func() bool {
		return indexOf(w.snapshot(), func(f []string) bool { return len(f) == 3 && f[0] == "ADDED" && f[1] == "cron" }) >= 0
	})
	s.kubectl("patch", "crontab", "cron", "--type=json", "-p", `[{"op":"replace","path":"/spec/image","value":"other"}]`)
	eventually(t, 30*time.Second, "MODIFIED cron other", func() bool {
		return indexOf(w.snapshot(), func(f []string) bool { return len(f) == 3 && f[0] == "MODIFIED" && f[2] == "other" }) >= 0
	})
	w.stop()

	// OpenAPI v3 of the group: kubectl explain.
	if out := s.kubectl("explain", "crontab.spec"); !strings.Contains(out, "cronSpec") || !strings.Contains(out, "replicas") {
		t.Errorf("kubectl explain crontab.spec:\n%s", out)
	}

	// Deleting the CRD deletes its objects and stops serving them.
	s.kubectl("delete", "crd", "crontabs.stable.example.com", "--timeout=60s")
	out, err = s.kubectlErr("get", "--raw", "/apis/stable.example.com/v1/namespaces/default/crontabs")
	if err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("list after CRD deletion: err=%v\n%s", err, out)
	}
	s.kubectl("apply", "-f", crdFile)
	s.kubectl("wait", "--for", "condition=established", "--timeout=60s", "crd/crontabs.stable.example.com")
	if out := s.kubectl("get", "crontabs", "-A", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("objects survived their CRD: %s", out)
	}
}

// TestJobSetCRD: tools detect JobSet by its CRD; batchlet reports the
// generated JobSet CRD as established, and applying it (as an install
// would) keeps the built-in JobSet serving.
func TestJobSetCRD(t *testing.T) {
	s := startServer(t)
	if got := s.jsonpath("crd/jobsets.jobset.x-k8s.io", `{.status.conditions[?(@.type=="Established")].status}`); got != "True" {
		t.Fatalf("JobSet CRD Established = %q, want True", got)
	}
	crds, err := exec.Command(binary, "crds").Output()
	if err != nil {
		t.Fatalf("batchlet crds: %v", err)
	}
	out, err := s.kubectlStdin(string(crds), "apply", "--server-side", "-f", "-")
	if err != nil || !strings.Contains(out, "customresourcedefinition.apiextensions.k8s.io/jobsets.jobset.x-k8s.io serverside-applied") {
		t.Fatalf("apply --server-side of the JobSet CRD: err=%v\n%s", err, out)
	}
	s.kubectl("wait", "--for", "condition=established", "--timeout=60s", "crd/jobsets.jobset.x-k8s.io")
	// Still the built-in JobSet: its own validation, not the CRD's schema.
	out = s.kubectl("create", "--dry-run=server", "-f", example("jobset-recreatejob-example.yaml"))
	if !strings.Contains(out, "created (server dry run)") {
		t.Fatalf("create a JobSet after applying its CRD:\n%s", out)
	}
	if got := s.kubectl("api-resources", "--api-group=jobset.x-k8s.io", "-o", "name"); strings.TrimSpace(got) != "jobsets.jobset.x-k8s.io" {
		t.Errorf("api-resources of jobset.x-k8s.io = %q", got)
	}
}

// TestCustomResourceGarbageCollection: the garbage collector finds a CRD's
// resource by discovery (within its 30 s resync, as upstream) and deletes
// what a deleted custom object owned.
func TestCustomResourceGarbageCollection(t *testing.T) {
	s := startServer(t)
	crdFile, err := filepath.Abs(filepath.Join("testdata", "crontab-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s.kubectl("apply", "-f", crdFile)
	s.kubectl("wait", "--for", "condition=established", "--timeout=60s", "crd/crontabs.stable.example.com")
	if out, err := s.kubectlStdin(cronTab("owner", ""), "apply", "-f", "-"); err != nil {
		t.Fatalf("create CronTab: %v\n%s", err, out)
	}
	uid := s.jsonpath("crontab/owner", "{.metadata.uid}")
	owned := `apiVersion: v1
kind: ConfigMap
metadata:
  name: owned
  ownerReferences:
  - apiVersion: stable.example.com/v1
    kind: CronTab
    name: owner
    uid: ` + uid + "\n"
	if out, err := s.kubectlStdin(owned, "apply", "-f", "-"); err != nil {
		t.Fatalf("create ConfigMap: %v\n%s", err, out)
	}
	s.kubectl("delete", "crontab", "owner")
	s.kubectl("wait", "--for=delete", "configmap/owned", "--timeout=120s")
}
