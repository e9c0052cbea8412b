package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchlet/batchlet/runtime/containerinit"
)

// TestPodIsNotAnAdministrator: a pod of the process runtime tries to reach
// the cluster's admin rights and another pod's files, and fails each: the
// data dir (admin token, CA key, kubeconfig, store), directly and through
// the host's /tmp, another pod's /tmp and volume, the server's process in
// /proc, the host's disks, lifting the mounts that hide all that, and the
// API beyond its service account's rights. A pod with runAsUser and
// fsGroup runs with those ids and reads its projected token.
func TestPodIsNotAnAdministrator(t *testing.T) {
	s := startServer(t)
	// The victim keeps a secret in its /tmp and in an emptyDir.
	victim := `apiVersion: v1
kind: Pod
metadata: {name: victim}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: victim
    command: [sh, -c, "echo s3cret > /tmp/secret && echo s3cret > /data/secret && touch /tmp/ready && sleep 300"]
    readinessProbe: {exec: {command: [test, -e, /tmp/ready]}, periodSeconds: 1}
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
`
	if out, err := s.kubectlStdin(victim, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply victim: %v\n%s", err, out)
	}
	s.kubectl("wait", "--for=condition=Ready", "pod/victim", "--timeout=60s")
	victimDir := s.podDir(s.jsonpath("pod/victim", "{.metadata.uid}"))
	if _, err := os.Stat(victimDir); err != nil {
		t.Fatalf("the victim's pod directory: %v", err) // else every path below is denied for not existing
	}
	viaHostTmp := func(p string) string { return containerinit.InPod(p) }
	paths := []string{
		s.dataDir, filepath.Join(s.dataDir, "token"), filepath.Join(s.dataDir, "ca.key"), filepath.Join(s.dataDir, "kubeconfig"),
		filepath.Join(s.dataDir, "state.db"), viaHostTmp(filepath.Join(s.dataDir, "token")), viaHostTmp(filepath.Join(s.dataDir, "ca.key")),
		filepath.Join(victimDir, "tmp", "secret"), filepath.Join(victimDir, "volumes", "data", "secret"),
		viaHostTmp(filepath.Join(victimDir, "tmp", "secret")), viaHostTmp(filepath.Join(victimDir, "volumes", "data", "secret")),
	}
	var script strings.Builder
	for _, p := range paths {
		script.WriteString(`if cat '` + p + `' >/dev/null 2>&1 || ls '` + p + `' >/dev/null 2>&1; then echo "READ ` + p + `"; else echo denied; fi` + "\n")
	}
	serverPid := itoa(s.cmd.Process.Pid)
	script.WriteString(`if cat /proc/` + serverPid + `/environ >/dev/null 2>&1; then echo "READ server environ"; else echo denied; fi
[ "$(cut -d' ' -f2 /proc/1/stat)" = "(sh)" ] && echo denied || echo "PID 1 is not the pod's"
ls /dev | grep -qE '^(sd|vd|xvd|nvme|loop)' && echo "host disks visible" || echo denied
umount ` + containerinit.HostTmp + ` 2>/dev/null && echo "unmounted the mask" || echo denied
api() { curl -sk -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $(cat /var/run/secrets/kubernetes.io/serviceaccount/token)" "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT$1"; }
api /api/v1/secrets
api /api/v1/namespaces/kube-system/secrets
api /api/v1/pods
api /api/v1/namespaces/default/pods
`)
	intruder := `apiVersion: v1
kind: Pod
metadata: {name: intruder}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: intruder
    command: [sh, -c, ` + quoteYAML(script.String()) + `]
`
	if out, err := s.kubectlStdin(intruder, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply intruder: %v\n%s", err, out)
	}
	s.kubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/intruder", "--timeout=60s")
	want := strings.Repeat("denied\n", len(paths)+4) + "403\n403\n403\n403\n"
	if got := s.kubectl("logs", "intruder"); got != want {
		t.Errorf("intruder log:\n%s\nwant:\n%s", got, want)
	}

	user := `apiVersion: v1
kind: Pod
metadata: {name: user}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000}
  containers:
  - name: main
    image: user
    command: [sh, -c, 'id -u; id -g; id -G; test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo token-read; stat -c "%a %u %g" /var/run/secrets/kubernetes.io/serviceaccount/token; grep CapEff /proc/self/status']
`
	if out, err := s.kubectlStdin(user, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply user: %v\n%s", err, out)
	}
	s.kubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/user", "--timeout=60s")
	const wantUser = "1000\n1000\n1000 2000\ntoken-read\n640 1000 2000\nCapEff:\t0000000000000000\n"
	if got := s.kubectl("logs", "user"); got != wantUser {
		t.Errorf("user log:\n%s\nwant:\n%s", got, wantUser)
	}
	execAsContainerUser(t, s)
}

// execAsContainerUser: kubectl exec into a runAsUser 1000 pod runs as the
// container does (uid 1000, its groups, no effective capabilities, its own
// PID namespace) and cannot read the data dir; the command's exit code
// reaches kubectl.
func execAsContainerUser(t *testing.T, s *server) {
	pod := `apiVersion: v1
kind: Pod
metadata: {name: user-exec}
spec:
  securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000}
  containers:
  - name: main
    image: user-exec
    command: [sleep, "300"]
`
	if out, err := s.kubectlStdin(pod, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply user-exec: %v\n%s", err, out)
	}
	s.kubectl("wait", "--for=condition=Ready", "pod/user-exec", "--timeout=60s")
	script := `id -u; id -G; grep CapEff /proc/self/status; grep NoNewPrivs /proc/self/status; cut -d' ' -f2 /proc/1/stat
for p in '` + s.dataDir + `' '` + filepath.Join(s.dataDir, "token") + `' '` + containerinit.InPod(filepath.Join(s.dataDir, "token")) + `'; do
  if cat "$p" >/dev/null 2>&1 || ls "$p" >/dev/null 2>&1; then echo "READ $p"; else echo denied; fi
done`
	const want = "1000\n1000 2000\nCapEff:\t0000000000000000\nNoNewPrivs:\t0\n(sleep)\ndenied\ndenied\ndenied\n"
	if got := s.kubectl("exec", "user-exec", "--", "sh", "-c", script); got != want {
		t.Errorf("exec as the container's user:\n%s\nwant:\n%s", got, want)
	}
	out, err := s.kubectlErr("exec", "user-exec", "--", "sh", "-c", "exit 3")
	if err == nil || !strings.Contains(out, "command terminated with exit code 3") {
		t.Errorf("exec exit 3: err %v, output %q", err, out)
	}
}

// quoteYAML is s as a double-quoted YAML scalar.
func quoteYAML(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
