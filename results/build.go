package results

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels copied from the pod, so results select by Job, index and JobSet
// as the pods did.
var copiedLabelPrefixes = []string{"batch.kubernetes.io/", "jobset.sigs.k8s.io/"}

// maxNameLength is a DNS subdomain's.
const maxNameLength = 253

// Name is the deterministic name of a pod's container attempt:
// POD.CONTAINER.ATTEMPT. Container names hold no dot, so the name parses
// from the right whatever the pod's name; a retried create or an agent
// restart writes the same name and does not duplicate. A name past 253
// characters keeps the end and a hash of the whole pod name.
func Name(pod, container string, attempt int32) string {
	suffix := "." + container + "." + strconv.Itoa(int(attempt))
	if len(pod)+len(suffix) <= maxNameLength {
		return pod + suffix
	}
	sum := sha256.Sum256([]byte(pod))
	hash := "-" + hex.EncodeToString(sum[:])[:10]
	keep := maxNameLength - len(suffix) - len(hash)
	return strings.TrimRight(pod[:keep], ".-") + hash + suffix
}

// Attempt is one terminated container attempt the agent observed.
type Attempt struct {
	Container string
	Init      bool
	Number    int32
	State     *corev1.ContainerStateTerminated
	// Previous: the attempt is the container's lastState (it has been
	// restarted since), so its log is the previous one.
	Previous bool
}

// Key identifies an attempt within its pod.
func (a Attempt) Key() string { return a.Container + "." + strconv.Itoa(int(a.Number)) }

// Terminated lists the terminated attempts a pod status shows: each
// container's current state when terminated (attempt restartCount) and its
// lastState when terminated (attempt restartCount-1).
func Terminated(st *corev1.PodStatus) []Attempt {
	var out []Attempt
	add := func(statuses []corev1.ContainerStatus, init bool) {
		for i := range statuses {
			cs := &statuses[i]
			if t := cs.LastTerminationState.Terminated; t != nil && cs.RestartCount > 0 {
				out = append(out, Attempt{Container: cs.Name, Init: init, Number: cs.RestartCount - 1, State: t, Previous: true})
			}
			if t := cs.State.Terminated; t != nil {
				out = append(out, Attempt{Container: cs.Name, Init: init, Number: cs.RestartCount, State: t})
			}
		}
	}
	add(st.InitContainerStatuses, true)
	add(st.ContainerStatuses, false)
	return out
}

// New builds the result of one attempt of pod's container, with logTail
// (already cut by a TailBuffer) and whether it was cut.
func New(pod *corev1.Pod, a Attempt, logTail string, truncated bool) *ContainerResult {
	t := a.State
	r := &ContainerResult{
		ObjectMeta: metav1.ObjectMeta{Name: Name(pod.Name, a.Container, a.Number), Namespace: pod.Namespace, Labels: copiedLabels(pod.Labels)},
		Spec: ContainerResultSpec{
			PodName: pod.Name, PodUID: string(pod.UID), NodeName: pod.Spec.NodeName,
			ContainerName: a.Container, InitContainer: a.Init, Attempt: a.Number,
			ExitCode: t.ExitCode, Signal: t.Signal, Reason: t.Reason, Message: t.Message,
			StartedAt: t.StartedAt, FinishedAt: t.FinishedAt, LogTail: logTail, LogTruncated: truncated,
		},
	}
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "Job" {
		r.Spec.JobName, r.Spec.JobUID = ref.Name, string(ref.UID)
	}
	v, ok := pod.Labels[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = pod.Annotations[batchv1.JobCompletionIndexAnnotation]
	}
	if ok {
		if i, err := strconv.ParseInt(v, 10, 32); err == nil {
			idx := int32(i)
			r.Spec.CompletionIndex = &idx
		}
	}
	r.Spec.JobSetName = pod.Labels["jobset.sigs.k8s.io/jobset-name"]
	return r
}

func copiedLabels(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		for _, p := range copiedLabelPrefixes {
			if strings.HasPrefix(k, p) {
				out[k] = v
			}
		}
	}
	return out
}

// TailBuffer is an io.Writer keeping the last Max bytes written. It
// compacts only when twice Max is held, so a long log costs linear time.
type TailBuffer struct {
	Max     int
	buf     []byte
	dropped bool
	// lastDropped is the byte just before buf, once bytes were dropped.
	lastDropped byte
}

// Write implements io.Writer.
func (b *TailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > b.Max {
		b.drop(len(b.buf))
		b.dropped, b.lastDropped = true, p[len(p)-b.Max-1]
		p = p[len(p)-b.Max:]
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.Max {
		b.drop(len(b.buf) - b.Max)
	}
	return n, nil
}

// drop removes the first n bytes of buf.
func (b *TailBuffer) drop(n int) {
	if n == 0 {
		return
	}
	b.dropped, b.lastDropped = true, b.buf[n-1]
	b.buf = append(b.buf[:0], b.buf[n:]...)
}

// Tail returns the kept bytes and whether earlier ones were dropped. A cut
// tail starts at a line (a partial first line is dropped, unless it is the
// only one) and is valid UTF-8.
func (b *TailBuffer) Tail() (string, bool) {
	out, dropped, before := b.buf, b.dropped, b.lastDropped
	if over := len(out) - b.Max; over > 0 {
		out, dropped, before = out[over:], true, out[over-1]
	}
	if dropped && before != '\n' {
		if i := bytes.IndexByte(out, '\n'); i >= 0 && i < len(out)-1 {
			out = out[i+1:]
		}
	}
	s := string(out)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s, dropped
}
