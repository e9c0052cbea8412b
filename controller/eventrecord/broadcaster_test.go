package eventrecord

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
)

// sinkCall is one write a broadcaster made, without what the clock or
// the server chose (names, timestamps, versions).
type sinkCall struct {
	Op      string
	Object  string
	Type    string
	Reason  string
	Message string
	Count   int32
	Patch   string
}

// recordingSink answers like an API server and remembers the calls. Its
// third patch finds the event gone (the broadcaster creates it again).
type recordingSink struct {
	mu      sync.Mutex
	calls   []sinkCall
	patches int
	version int
	done    chan struct{}
}

func (s *recordingSink) Create(e *v1.Event) (*v1.Event, error) {
	return s.answer("create", e, nil)
}

func (s *recordingSink) Update(e *v1.Event) (*v1.Event, error) {
	return s.answer("update", e, nil)
}

func (s *recordingSink) Patch(e *v1.Event, patch []byte) (*v1.Event, error) {
	s.mu.Lock()
	s.patches++
	gone := s.patches == 3
	s.mu.Unlock()
	if gone {
		s.record("patch", e, patch)
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, e.Name)
	}
	return s.answer("patch", e, patch)
}

func (s *recordingSink) answer(op string, e *v1.Event, patch []byte) (*v1.Event, error) {
	s.record(op, e, patch)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version++
	w := e.DeepCopy()
	w.ResourceVersion = fmt.Sprint(s.version)
	if e.Reason == sentinelReason {
		close(s.done)
	}
	return w, nil
}

func (s *recordingSink) record(op string, e *v1.Event, patch []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, sinkCall{
		Op: op, Object: e.InvolvedObject.Name, Type: e.Type, Reason: e.Reason,
		Message: e.Message, Count: e.Count, Patch: withoutTimestamp(patch),
	})
}

// withoutTimestamp drops the patch's lastTimestamp, the clock's.
func withoutTimestamp(patch []byte) string {
	if patch == nil {
		return ""
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return "invalid: " + string(patch)
	}
	delete(m, "lastTimestamp")
	out, _ := json.Marshal(m)
	return string(out)
}

const sentinelReason = "Sentinel"

// sendJobStream records what a Job controller and a kubelet say about a
// 60-pod Job, then a sentinel event that the sink waits for: the events
// are written in order, so after it all are.
func sendJobStream(b record.EventBroadcaster) {
	job := &batch.Job{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "default", UID: "u-job"}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "big-0", Namespace: "default", UID: "u-pod"}}
	ctrl := b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "job-controller"})
	kubelet := b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubelet", Host: "node-1"})
	for i := range 60 {
		ctrl.Eventf(job, v1.EventTypeNormal, "SuccessfulCreate", "Created pod: big-%d", i)
		if i%10 == 0 {
			kubelet.Event(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
		}
	}
	ctrl.Event(job, v1.EventTypeNormal, "Completed", "Job completed")
	ctrl.Event(pod, v1.EventTypeNormal, sentinelReason, "all sent")
}

func recordedCalls(t *testing.T, b record.EventBroadcaster) []sinkCall {
	t.Helper()
	sink := &recordingSink{done: make(chan struct{})}
	b.StartRecordingToSink(sink)
	defer b.Shutdown()
	sendJobStream(b)
	<-sink.done
	sink.mu.Lock()
	defer sink.mu.Unlock()
	return sink.calls
}

// The broadcaster writes the same events as client-go's: the first 9
// creations as they are, then one aggregated event patched up to the
// 25th, nothing more about the Job until a token refills; the pod's
// repeated warning counted up; the patch of an event the server lost
// followed by its creation.
func TestBroadcasterWritesWhatClientGoWrites(t *testing.T) {
	want := recordedCalls(t, record.NewBroadcaster())
	got := recordedCalls(t, NewBroadcaster(Options{}))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sink calls differ from client-go's\n got: %+v\nwant: %+v", got, want)
	}
	var jobWrites, patches int
	for _, c := range want {
		if c.Object == "big" {
			jobWrites++
		}
		if c.Op == "patch" {
			patches++
		}
	}
	if jobWrites != 26 || patches == 0 { // 25 writes, one retried as a create
		t.Errorf("client-go wrote %d events about the Job, %d patches; want 26 and some patches: the stream no longer tests the spam filter", jobWrites, patches)
	}
}
