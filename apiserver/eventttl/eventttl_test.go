package eventttl

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeStore is a revisioned store of events keyed by name: each write
// takes the next revision, as the API server's storage does.
type fakeStore struct {
	rev       int64
	events    map[string]Stored
	deleted   []string
	deleteErr error
	decoded   int // events decoded by Events
}

func newFakeStore() *fakeStore { return &fakeStore{events: map[string]Stored{}} }

func (f *fakeStore) write(ev *corev1.Event) {
	f.rev++
	f.events[ev.Name] = Stored{Ref: Ref{Name: ev.Name, Revision: f.rev}, Event: ev}
}

func (f *fakeStore) names() []string {
	var names []string
	for name := range f.events {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (f *fakeStore) CurrentRevision() int64 { return f.rev }

func (f *fakeStore) Events(_ context.Context, after string, limit int) ([]Stored, string, error) {
	var page []Stored
	for _, name := range f.names() {
		if name > after {
			page = append(page, f.events[name])
		}
	}
	if len(page) > limit {
		page = page[:limit]
		f.decoded += len(page)
		return page, page[limit-1].Name, nil
	}
	f.decoded += len(page)
	return page, "", nil
}

func (f *fakeStore) WrittenIn(_ context.Context, from, to int64) ([]Ref, error) {
	var refs []Ref
	for _, name := range f.names() {
		if r := f.events[name].Revision; r > from && r <= to {
			refs = append(refs, f.events[name].Ref)
		}
	}
	return refs, nil
}

func (f *fakeStore) Delete(_ context.Context, ref Ref) error {
	if f.deleteErr != nil {
		return f.deleteErr
	}
	if cur, ok := f.events[ref.Name]; ok && cur.Revision == ref.Revision {
		delete(f.events, ref.Name)
		f.deleted = append(f.deleted, ref.Name)
	}
	return nil
}

func newExpirer(store Store, clock *clocktesting.FakeClock) *Expirer {
	return &Expirer{Store: store, TTL: time.Hour, Clock: clock, Log: slog.New(slog.DiscardHandler)}
}

// The events stored before the loop starts expire by the latest time they
// record.
func TestExpireOnceStoredBeforeStart(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }
	cases := map[string]struct {
		event *corev1.Event
		want  bool // expired
	}{
		"created long ago": {event: &corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(-2 * time.Hour)}}, want: true},
		"last timestamp recent": {event: &corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(-2 * time.Hour)},
			LastTimestamp: at(-time.Minute)}},
		"event time recent": {event: &corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(-2 * time.Hour)},
			EventTime: metav1.NewMicroTime(now.Add(-time.Minute))}},
		"series recent": {event: &corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(-2 * time.Hour)},
			Series: &corev1.EventSeries{LastObservedTime: metav1.NewMicroTime(now.Add(-time.Minute))}}},
		"just inside the TTL": {event: &corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(-time.Hour)}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.event.Name = "e"
			store := newFakeStore()
			store.write(tc.event)
			if err := newExpirer(store, clocktesting.NewFakeClock(now)).ExpireOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := len(store.deleted) == 1; got != tc.want {
				t.Fatalf("expired %v, want %v", got, tc.want)
			}
		})
	}
}

// Events written while the loop runs expire by their last write's
// revision, without being decoded: a rewrite (whatever its timestamps)
// renews the TTL, as a new etcd lease does.
func TestExpireOnceByWriteRevision(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(start)
	store := newFakeStore()
	old := func(name string, age time.Duration) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(start.Add(-age))}}
	}
	store.write(old("stale", 2*time.Hour))
	store.write(old("before", 30*time.Minute))
	store.write(old("rewritten", 50*time.Minute))
	e := newExpirer(store, clock)
	type step struct {
		at     time.Duration // since start
		write  []string      // events (re)written before the pass, with an old creationTimestamp
		remain []string      // events left after the pass
	}
	steps := []step{
		{at: 0, remain: []string{"before", "rewritten"}},
		{at: time.Second, write: []string{"a", "rewritten"}, remain: []string{"a", "before", "rewritten"}},
		{at: time.Minute, write: []string{"b"}, remain: []string{"a", "b", "before", "rewritten"}},
		{at: 2 * time.Minute, remain: []string{"a", "b", "before", "rewritten"}},
		// "before" is past its LastWrite plus the TTL; "rewritten" was
		// written again after the start and is not.
		{at: 31 * time.Minute, remain: []string{"a", "b", "rewritten"}},
		{at: 60 * time.Minute, remain: []string{"a", "b", "rewritten"}},
		// The mark at 1s is before the cutoff: "a" and "rewritten" were
		// written at or before it; "b" is exactly one TTL old.
		{at: 61 * time.Minute, remain: []string{"b"}},
		{at: 61*time.Minute + time.Second, write: []string{"b"}, remain: []string{"b"}},
		{at: 121*time.Minute + time.Second, remain: []string{"b"}},
		{at: 121*time.Minute + 2*time.Second, remain: nil},
	}
	for _, s := range steps {
		clock.SetTime(start.Add(s.at))
		for _, name := range s.write {
			store.write(old(name, 3*time.Hour))
		}
		if err := e.ExpireOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := store.names(); !slices.Equal(got, s.remain) {
			t.Fatalf("at %v: events left %v, want %v", s.at, got, s.remain)
		}
	}
	if store.decoded != 3 {
		t.Fatalf("decoded %d events, want only the 3 stored before the start", store.decoded)
	}
}

// The first pass reads every page, and a failed delete does not stop it:
// the next pass tries again.
func TestExpireOnceReadsAllPagesAndRetries(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	store := newFakeStore()
	store.deleteErr = errors.New("boom")
	var want []string
	for i := range PageSize + 3 {
		name := strings.Repeat("e", i/26+1) + string(rune('a'+i%26))
		store.write(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))}})
		want = append(want, name)
	}
	clock := clocktesting.NewFakeClock(now)
	e := newExpirer(store, clock)
	if err := e.ExpireOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(store.events) != len(want) {
		t.Fatalf("%d events left after failed deletes, want %d", len(store.events), len(want))
	}
	store.deleteErr = nil
	clock.Step(time.Minute)
	if err := e.ExpireOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if slices.Sort(store.deleted); !slices.Equal(store.deleted, want) || len(store.events) != 0 {
		t.Fatalf("deleted %d events, want %d", len(store.deleted), len(want))
	}
}
