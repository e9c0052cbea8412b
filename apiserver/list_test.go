package apiserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/eventttl"

	eventsv1 "k8s.io/api/events/v1"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestListPagination(t *testing.T) {
	e := newTestEnv(t)
	cms := e.client.CoreV1().ConfigMaps("default")
	for i := 0; i < 5; i++ {
		if _, err := cms.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	opts := metav1.ListOptions{Limit: 2}
	pages := 0
	for {
		l, err := cms.List(e.ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, cm := range l.Items {
			names = append(names, cm.Name)
		}
		if pages == 1 && (l.RemainingItemCount == nil || *l.RemainingItemCount != 3) {
			t.Fatalf("first page remainingItemCount = %v, want 3", l.RemainingItemCount)
		}
		if l.Continue == "" {
			break
		}
		// A write between pages does not break the list.
		if pages == 1 {
			if _, err := cms.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "zz"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		opts.Continue = l.Continue
	}
	if pages < 3 || names[0] != "cm0" || names[4] != "cm4" {
		t.Fatalf("pages %d names %v", pages, names)
	}
	_, err := cms.List(e.ctx, metav1.ListOptions{Continue: "garbage"})
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("bad continue: %v", err)
	}
}

func TestListSelectors(t *testing.T) {
	e := newTestEnv(t)
	pods := e.client.CoreV1().Pods("default")
	for i, node := range []string{"n1", "n2", ""} {
		p := testPod(fmt.Sprintf("p%d", i), node)
		p.Labels = map[string]string{"idx": fmt.Sprint(i), "group": "g"}
		if _, err := pods.Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct{ label, field, want string }{
		{"idx=1", "", "[p1]"},
		{"idx in (0,2)", "", "[p0 p2]"},
		{"group=g", "spec.nodeName=n2", "[p1]"},
		{"", "spec.nodeName=", "[p2]"},
		{"", "metadata.name=p0", "[p0]"},
		{"", "status.phase=Pending,metadata.namespace=default", "[p0 p1 p2]"},
		{"", "status.phase!=Pending", "[]"},
	}
	for _, c := range cases {
		l, err := pods.List(e.ctx, metav1.ListOptions{LabelSelector: c.label, FieldSelector: c.field})
		if err != nil {
			t.Fatalf("%q %q: %v", c.label, c.field, err)
		}
		var names []string
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		if got := fmt.Sprint(names); got != c.want && !(c.want == "[]" && len(names) == 0) {
			t.Errorf("label %q field %q: got %s, want %s", c.label, c.field, got, c.want)
		}
	}
	// Filtering with a limit still fills pages.
	l, err := pods.List(e.ctx, metav1.ListOptions{LabelSelector: "group=g", Limit: 2})
	if err != nil || len(l.Items) != 2 || l.Continue == "" {
		t.Fatalf("filtered page: %d items, continue %q, %v", len(l.Items), l.Continue, err)
	}
	if _, err := pods.List(e.ctx, metav1.ListOptions{FieldSelector: "spec.foo=bar"}); !apierrors.IsBadRequest(err) || err.Error() != "field label not supported: spec.foo" {
		t.Fatalf("unsupported field: %v", err)
	}
	if _, err := pods.List(e.ctx, metav1.ListOptions{LabelSelector: "a in (b"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("bad label selector: %v", err)
	}
}

func TestEventFieldSelectors(t *testing.T) {
	e := newTestEnv(t)
	evs := e.client.CoreV1().Events("default")
	for i, kind := range []string{"Job", "Pod"} {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i)}, Reason: "SuccessfulCreate", Type: "Normal",
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: "pi", Namespace: "default", UID: "u1"}}
		if _, err := evs.Create(e.ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := evs.List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Job,involvedObject.name=pi,involvedObject.uid=u1,type=Normal,reason=SuccessfulCreate"})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "e0" {
		t.Fatalf("events: %v %v", l, err)
	}
}

// TestEventsV1IsAViewOfCoreEvents: an event written through
// events.k8s.io/v1 is listed as a core/v1 event and back.
func TestEventsV1IsAViewOfCoreEvents(t *testing.T) {
	e := newTestEnv(t)
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "p.1", Namespace: "default"},
		EventTime:  metav1.NewMicroTime(time.Now()), Reason: "Scheduled", Note: "Successfully assigned default/p to n1",
		Type: "Normal", Action: "Binding", ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-x",
		Regarding: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "default"},
	}
	if _, err := e.client.EventsV1().Events("default").Create(e.ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := e.client.CoreV1().Events("default").List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=p"})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("core list: %v %v", l, err)
	}
	if got := l.Items[0]; got.Message != ev.Note || got.Reason != "Scheduled" || got.ReportingController != "default-scheduler" {
		t.Fatalf("core view = %+v", got)
	}
	back, err := e.client.EventsV1().Events("default").Get(e.ctx, "p.1", metav1.GetOptions{})
	if err != nil || back.Note != ev.Note || back.Regarding.Name != "p" {
		t.Fatalf("events.k8s.io view = %+v %v", back, err)
	}
}

func TestMetadataList(t *testing.T) {
	e := newTestEnv(t)
	code, body := e.do(t, "GET", "/api/v1/namespaces", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", "", nil, testToken)
	var l metav1.PartialObjectMetadataList
	if err := json.Unmarshal(body, &l); err != nil || code != 200 || l.Kind != "PartialObjectMetadataList" || len(l.Items) != 4 || l.Items[0].Name != "default" || l.Items[0].UID == "" {
		t.Fatalf("metadata list: %d %s", code, body)
	}
}

func TestEventsExpire(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now())
	// Loops run on the fake clock and never fire: the test drives expiry.
	e := newTestEnvWith(t, func(c *Config) { c.Clock = fake; c.EventTTL = time.Hour })
	mk := func(name string) {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p"},
			LastTimestamp: metav1.NewTime(fake.Now())}
		if _, err := e.client.CoreV1().Events("default").Create(e.ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A pass after each write stands for the loop's minute ticks: a pass
	// marks the store's revision with the time, which dates the writes.
	pass := func() {
		if err := e.srv.eventExpirer().ExpireOnce(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	mk("old")
	pass()
	fake.Step(50 * time.Minute)
	mk("new")
	pass()
	fake.Step(20 * time.Minute)
	pass()
	l, err := e.client.CoreV1().Events("default").List(e.ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "new" {
		t.Fatalf("events left: %v %v", l, err)
	}
}

// The expiry loop's walk finds, across pages, the events last written in a
// revision range, with their names.
func TestEventStoreWrittenIn(t *testing.T) {
	e := newTestEnv(t)
	var revs []int64
	for _, ref := range []struct{ ns, name string }{{"default", "a"}, {"default", "b"}, {"kube-system", "c"}, {"default", "d"}, {"kube-system", "e"}} {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: ref.name}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p"}}
		out, err := e.client.CoreV1().Events(ref.ns).Create(e.ctx, ev, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rev, _ := strconv.ParseInt(out.ResourceVersion, 10, 64)
		revs = append(revs, rev)
	}
	got, err := eventStore{s: e.srv, page: 2}.WrittenIn(e.ctx, revs[0], revs[3])
	if err != nil {
		t.Fatal(err)
	}
	want := []eventttl.Ref{{Namespace: "default", Name: "b", Revision: revs[1]}, {Namespace: "default", Name: "d", Revision: revs[3]},
		{Namespace: "kube-system", Name: "c", Revision: revs[2]}}
	if !slices.Equal(got, want) {
		t.Fatalf("written in (%d, %d] = %v, want %v", revs[0], revs[3], got, want)
	}
}
