package e2e

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer a test can read while a process writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

const leaderElectionJobSet = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: JOBSET
spec:
  replicatedJobs:
  - name: workers
    replicas: 1
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: main
              image: busybox
              command: ["true"]
`

// TestControllersLeaderElection runs two replicas of `batchlet controllers
// --leader-elect`: one leads and reconciles; when it stops, the other takes
// the Lease over and reconciles, as a two-replica Deployment from
// `batchlet install` would on a cluster.
func TestControllersLeaderElection(t *testing.T) {
	s := startServer(t, "--controllers=job,ttl-after-finished,garbage-collector,scheduler,podgc,nodelifecycle,root-ca-cert-publisher")
	type replica struct {
		cmd *exec.Cmd
		log *syncBuffer
	}
	start := func() *replica {
		r := &replica{log: &syncBuffer{}}
		r.cmd = exec.Command(binary, "controllers", "--kubeconfig", s.kubeconfig, "--controllers=jobset",
			"--leader-elect", "--leader-elect-namespace=default")
		r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = r.cmd.Process.Signal(syscall.SIGTERM)
			_ = r.cmd.Wait()
			if t.Failed() {
				t.Logf("replica %d log:\n%s", r.cmd.Process.Pid, r.log.String())
			}
		})
		return r
	}
	replicas := []*replica{start(), start()}
	leading := func(r *replica) bool { return strings.Contains(r.log.String(), "leading; starting controllers") }
	var leader, standby *replica
	eventually(t, 60*time.Second, "one replica to lead", func() bool {
		for i, r := range replicas {
			if leading(r) {
				leader, standby = r, replicas[1-i]
				return true
			}
		}
		return false
	})
	holder := s.jsonpath("lease/batchlet-controllers", "{.spec.holderIdentity}")
	if holder == "" {
		t.Fatal("the Lease has no holder while a replica leads")
	}
	if leading(standby) {
		t.Fatal("both replicas lead")
	}
	s.kubectlStdin(strings.ReplaceAll(leaderElectionJobSet, "JOBSET", "first"), "apply", "-f", "-")
	s.waitCondition("jobset/first", "Completed", 60*time.Second)

	// A graceful stop releases the Lease, so the standby takes over within
	// its retry period rather than the lease duration.
	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := leader.cmd.Wait(); err != nil {
		t.Errorf("the leader exited with %v after SIGTERM, want 0", err)
	}
	eventually(t, 60*time.Second, "the standby to lead", func() bool { return leading(standby) })
	if got := s.jsonpath("lease/batchlet-controllers", "{.spec.holderIdentity}"); got == holder || got == "" {
		t.Errorf("Lease holder = %q after failover, want a new identity (was %q)", got, holder)
	}
	if out, err := s.kubectlStdin(strings.ReplaceAll(leaderElectionJobSet, "JOBSET", "second"), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	s.waitCondition("jobset/second", "Completed", 60*time.Second)
}

// TestInstallDryRunAndCRDs checks what `batchlet install --dry-run` and
// `batchlet crds` print parse as the objects kubectl would create.
func TestInstallDryRunAndCRDs(t *testing.T) {
	kubectlPath(t)
	crds, err := exec.Command(binary, "crds").Output()
	if err != nil {
		t.Fatal(err)
	}
	out, err := kubectlLocal(crds, "label", "--local", "-f", "-", "-o", "name", "checked=true")
	if err != nil || strings.TrimSpace(out) != "customresourcedefinition.apiextensions.k8s.io/jobsets.jobset.x-k8s.io\n"+
		"customresourcedefinition.apiextensions.k8s.io/containerresults.results.batchlet.dev\n"+
		"customresourcedefinition.apiextensions.k8s.io/workqueues.batchlet.dev" {
		t.Errorf("kubectl label --local of `batchlet crds`: %v\n%s", err, out)
	}
	objs, err := exec.Command(binary, "install", "--dry-run", "--skip-crds", "--controllers=jobset", "--image=example.com/batchlet:v1", "--replicas=2").Output()
	if err != nil {
		t.Fatal(err)
	}
	out, err = kubectlLocal(objs, "label", "--local", "-f", "-", "-o", "name", "checked=true")
	want := "namespace/batchlet-system\nserviceaccount/batchlet-controllers\nclusterrole.rbac.authorization.k8s.io/batchlet-controllers\n" +
		"clusterrolebinding.rbac.authorization.k8s.io/batchlet-controllers\nrole.rbac.authorization.k8s.io/batchlet-controllers-leader-election\n" +
		"rolebinding.rbac.authorization.k8s.io/batchlet-controllers-leader-election\nclusterrole.rbac.authorization.k8s.io/batchlet:results-view\n" +
		"secret/batchlet-controllers-webhook-tls\n" +
		"service/batchlet-controllers-webhook\ndeployment.apps/batchlet-controllers\n" +
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/batchlet-jobset\nvalidatingwebhookconfiguration.admissionregistration.k8s.io/batchlet-jobset"
	if err != nil || strings.TrimSpace(out) != want {
		t.Errorf("kubectl label --local of `batchlet install --dry-run`: %v\n%s\nwant:\n%s", err, out, want)
	}
}

// kubectlLocal runs kubectl without a server.
func kubectlLocal(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("kubectl", args...)
	cmd.Env = []string{"KUBECONFIG=/dev/null", "HOME=/nonexistent"}
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
