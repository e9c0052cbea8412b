package eventttl

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeStore serves events in pages of the size asked, keyed by name.
type fakeStore struct {
	events    []*corev1.Event
	deleted   []string
	deleteErr error
}

func (f *fakeStore) Events(_ context.Context, after string, limit int) ([]*corev1.Event, string, error) {
	var page []*corev1.Event
	for _, ev := range f.events {
		if ev.Name > after {
			page = append(page, ev)
		}
	}
	if len(page) <= limit {
		return page, "", nil
	}
	page = page[:limit]
	return page, page[limit-1].Name, nil
}

func (f *fakeStore) Delete(_ context.Context, _, name string) error {
	f.deleted = append(f.deleted, name)
	return f.deleteErr
}

func TestExpireOnce(t *testing.T) {
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
			store := &fakeStore{events: []*corev1.Event{tc.event}}
			e := &Expirer{Store: store, TTL: time.Hour, Clock: clocktesting.NewFakeClock(now), Log: slog.New(slog.DiscardHandler)}
			if err := e.ExpireOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := len(store.deleted) == 1; got != tc.want {
				t.Fatalf("expired %v, want %v", got, tc.want)
			}
		})
	}
}

// A pass reads every page, and a failed delete does not stop it.
func TestExpireOnceReadsAllPages(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	store := &fakeStore{deleteErr: errors.New("boom")}
	var want []string
	for i := range PageSize + 3 {
		name := string(rune('a'+i/26/26%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i%26))
		store.events = append(store.events, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))}})
		want = append(want, name)
	}
	e := &Expirer{Store: store, TTL: time.Hour, Clock: clocktesting.NewFakeClock(now), Log: slog.New(slog.DiscardHandler)}
	if err := e.ExpireOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(store.deleted, want) {
		t.Fatalf("deleted %d events, want %d", len(store.deleted), len(want))
	}
}
