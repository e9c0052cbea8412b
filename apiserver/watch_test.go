package apiserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
	return watch.Event{}
}

func TestWatchResumesFromOlderRV(t *testing.T) {
	e := newTestEnv(t)
	cms := e.client.CoreV1().ConfigMaps("default")
	a, err := cms.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Data = map[string]string{"k": "v"}
	if _, err := cms.Update(e.ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(e.ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(e.ctx, metav1.ListOptions{ResourceVersion: a.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := nextEvent(t, w)
	if ev.Type != watch.Modified || ev.Object.(*corev1.ConfigMap).Data["k"] != "v" {
		t.Fatalf("first replayed event = %s %+v", ev.Type, ev.Object)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Deleted || ev.Object.(*corev1.ConfigMap).Name != "a" {
		t.Fatalf("second replayed event = %s", ev.Type)
	}
}

func TestWatchTooOldResourceVersionIsGone(t *testing.T) {
	e := newTestEnv(t)
	cms := e.client.CoreV1().ConfigMaps("default")
	_, err := cms.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Compact(e.ctx, e.store.CurrentRevision()); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(e.ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := nextEvent(t, w)
	if ev.Type != watch.Error {
		t.Fatalf("event type = %s, want ERROR", ev.Type)
	}
	st := apierrors.FromObject(ev.Object)
	if !apierrors.IsResourceExpired(st) && !apierrors.IsGone(st) {
		t.Fatalf("error = %v, want 410 Expired", st)
	}
	want := fmt.Sprintf("too old resource version: 1 (%d)", e.store.CompactRevision())
	if st.Error() != want {
		t.Fatalf("message = %q, want %q", st.Error(), want)
	}
}

func TestWatchSelectorTransitions(t *testing.T) {
	e := newTestEnv(t)
	cms := e.client.CoreV1().ConfigMaps("default")
	w, err := cms.Watch(e.ctx, metav1.ListOptions{LabelSelector: "sel=yes"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cm, err := cms.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Labels = map[string]string{"sel": "yes"}
	if cm, err = cms.Update(e.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Added {
		t.Fatalf("start matching: got %s, want ADDED", ev.Type)
	}
	cm.Data = map[string]string{"x": "y"}
	if cm, err = cms.Update(e.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Modified {
		t.Fatalf("still matching: got %s, want MODIFIED", ev.Type)
	}
	cm.Labels = nil
	if _, err = cms.Update(e.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, w)
	if ev.Type != watch.Deleted || ev.Object.(*corev1.ConfigMap).Name != "a" {
		t.Fatalf("stop matching: got %s, want DELETED", ev.Type)
	}
}

func TestWatchFromZeroSendsCurrentState(t *testing.T) {
	e := newTestEnv(t)
	cms := e.client.CoreV1().ConfigMaps("default")
	for _, n := range []string{"a", "b"} {
		if _, err := cms.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := cms.Watch(e.ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, n := range []string{"a", "b"} {
		if ev := nextEvent(t, w); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != n {
			t.Fatalf("got %s %v, want ADDED %s", ev.Type, ev.Object, n)
		}
	}
	if _, err := cms.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "c" {
		t.Fatalf("live event: got %s", ev.Type)
	}
}

func TestWatchListInitialEventsThenBookmark(t *testing.T) {
	e := newTestEnv(t)
	cms := e.client.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(e.ctx, http.MethodGet, e.http.URL+
		"/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=2", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var types []string
	var bookmark struct {
		Object metav1.PartialObjectMetadata `json:"object"`
	}
	for sc.Scan() && len(types) < 2 {
		var ev struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
		if ev.Type == "BOOKMARK" {
			_ = json.Unmarshal(sc.Bytes(), &bookmark)
		}
	}
	if len(types) != 2 || types[0] != "ADDED" || types[1] != "BOOKMARK" {
		t.Fatalf("events = %v, want [ADDED BOOKMARK]", types)
	}
	if bookmark.Object.Annotations[InitialEventsEndAnnotation] != "true" || bookmark.Object.ResourceVersion == "" {
		t.Fatalf("bookmark = %+v", bookmark.Object.ObjectMeta)
	}
}

// TestInformerSeesEveryChangeInOrder runs a shared informer over the
// in-process config and checks the handler sees each write, in order.
func TestInformerSeesEveryChangeInOrder(t *testing.T) {
	e := newTestEnv(t)
	client, err := kubernetes.NewForConfig(e.srv.InProcessConfig())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	record := func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}
	f := informers.NewSharedInformerFactory(client, 0)
	inf := f.Core().V1().ConfigMaps().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o interface{}) { record("add " + o.(*corev1.ConfigMap).Name) },
		UpdateFunc: func(_, o interface{}) {
			cm := o.(*corev1.ConfigMap)
			record("update " + cm.Name + " " + cm.Data["v"])
		},
		DeleteFunc: func(o interface{}) {
			if cm, ok := o.(*corev1.ConfigMap); ok {
				record("delete " + cm.Name)
			}
		},
	})
	f.Start(e.ctx.Done())
	if !cache.WaitForCacheSync(e.ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	cms := client.CoreV1().ConfigMaps("default")
	var want []string
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("cm%d", i)
		cm, err := cms.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data = map[string]string{"v": "1"}
		if _, err := cms.Update(e.ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, "add "+name, "update "+name+" 1", "delete "+name)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= len(want) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("informer saw %v, want %v", seen, want)
	}
}

func TestFutureResourceVersionTimesOut(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now())
	e := newTestEnvWith(t, func(c *Config) { c.Clock = fake })
	done := make(chan error, 1)
	go func() {
		_, err := e.client.CoreV1().ConfigMaps("default").List(e.ctx, metav1.ListOptions{ResourceVersion: "100000", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		done <- err
	}()
	for {
		select {
		case err := <-done:
			if !apierrors.IsTimeout(err) || !strings.Contains(err.Error(), "Too large resource version: 100000") {
				t.Fatalf("future RV: %v", err)
			}
			return
		default:
			fake.Step(time.Second)
			time.Sleep(time.Millisecond)
		}
	}
}
