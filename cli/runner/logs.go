package runner

import (
	"bufio"
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// logStreamer follows the logs of every container attempt of the pods it is
// shown, once each, reporting whole lines (marked to be prefixed by pod when
// several pods may run) so concurrent streams never interleave mid-line.
type logStreamer struct {
	kube   kubernetes.Interface
	report Reporter
	prefix bool
	quiet  bool

	mu      sync.Mutex // guards started
	started map[string]bool
	wg      sync.WaitGroup
}

func newLogStreamer(kube kubernetes.Interface, report Reporter, prefix, quiet bool) *logStreamer {
	return &logStreamer{kube: kube, report: report, prefix: prefix, quiet: quiet, started: map[string]bool{}}
}

// observe starts a stream for every container attempt that has started.
func (l *logStreamer) observe(ctx context.Context, pod *corev1.Pod) {
	if l.quiet {
		return
	}
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if cs.State.Running == nil && cs.State.Terminated == nil {
			continue
		}
		k := fmt.Sprintf("%s/%s/%s/%d", pod.UID, pod.Name, cs.Name, cs.RestartCount)
		l.mu.Lock()
		if l.started[k] {
			l.mu.Unlock()
			continue
		}
		l.started[k] = true
		l.mu.Unlock()
		l.wg.Add(1)
		go l.stream(ctx, pod.Namespace, pod.Name, cs.Name)
	}
}

func (l *logStreamer) stream(ctx context.Context, ns, pod, container string) {
	defer l.wg.Done()
	req := l.kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true})
	rc, err := req.Stream(ctx)
	if err != nil {
		return // the pod may be gone already (TTL); nothing to show
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		l.report.Log(LogLine{Namespace: ns, Pod: pod, Container: container, Text: sc.Text(), Prefixed: l.prefix})
	}
}

// wait blocks until every stream ended or the timeout passed.
func (l *logStreamer) wait(timeout time.Duration) {
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
	}
}
