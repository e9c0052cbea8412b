package process

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batchlet/batchlet/runtime"
)

// An exec right after a container shows Running must join its finished
// mount namespace (private /tmp, working directory), not one still being
// built: it used to fail now and then with "can't cd to .../work".
func TestExecRightAfterStartSeesContainerMounts(t *testing.T) {
	r, _ := newTestRuntime(t, nil)
	if !r.Namespaces() {
		t.Skip("namespaces unavailable: exec runs on the host")
	}
	for i := range 8 {
		uid := types.UID(fmt.Sprintf("ready-%d", i))
		if err := r.StartPod(context.Background(), testPod(string(uid), corev1.RestartPolicyNever, shC("main", "sleep 30")), fakeResolver{}); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, r, uid, "running", func(s runtime.PodStatus) bool { return s.ContainerStatuses[0].State.Running != nil })
		var out bytes.Buffer
		err := r.Exec(context.Background(), uid, "main", []string{"sh", "-c", "hostname; touch /tmp/mine && echo ok"}, runtime.ExecStreams{Stdout: &out, Stderr: &out})
		if err != nil || strings.TrimSpace(out.String()) != "p-"+string(uid)+"\nok" {
			t.Fatalf("pod %d: exec right after start: %v, output %q", i, err, out.String())
		}
		r.RemovePod(uid)
	}
}
