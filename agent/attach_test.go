package agent

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/remotecommand"
)

// The attach endpoint (WebSocket and SPDY) feeds a stdin/stdinOnce
// container and streams its output until it exits.
func TestAttachEndpoint(t *testing.T) {
	a, client := processHarness(t)
	for _, proto := range []string{"websocket", "spdy"} {
		t.Run(proto, func(t *testing.T) {
			name := "att-" + proto
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-att-" + proto)},
				Spec: corev1.PodSpec{NodeName: "node-1", RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
					Name: "main", Image: "busybox", Command: []string{"sh", "-c", "read x; echo got $x; echo bye >&2"},
					Stdin: true, StdinOnce: true,
				}}},
			}
			if _, err := client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitPod(t, client, name, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
			u, _ := url.Parse(restConfig(a).Host + "/attach/default/" + name + "/main?input=1&output=1&error=1")
			var ex remotecommand.Executor
			var err error
			if proto == "websocket" {
				ex, err = remotecommand.NewWebSocketExecutor(restConfig(a), "GET", u.String())
			} else {
				ex, err = remotecommand.NewSPDYExecutor(restConfig(a), "POST", u)
			}
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			err = ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{
				Stdin: strings.NewReader("there\n"), Stdout: &stdout, Stderr: &stderr})
			if err != nil || stdout.String() != "got there\n" || stderr.String() != "bye\n" {
				t.Fatalf("attach: err %v stdout %q stderr %q", err, stdout.String(), stderr.String())
			}
			waitPod(t, client, name, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		})
	}
}
