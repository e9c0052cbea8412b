// Package eventttl expires events, as kube-apiserver does with etcd leases
// (--event-ttl): an event not written for the TTL is deleted.
//
// It is a loop outside the request path: the API server starts it with a
// Store over its storage and never calls it while serving a request.
package eventttl

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// PageSize is how many stored events one expiry step reads at a time.
const PageSize = 500

// Store is what the loop needs from the API server's storage.
type Store interface {
	// Events lists up to limit stored events after the storage key after
	// ("" from the start); next is the key to continue from, "" when done.
	Events(ctx context.Context, after string, limit int) (events []*corev1.Event, next string, err error)
	// Delete deletes an event; an event already gone is no error.
	Delete(ctx context.Context, namespace, name string) error
}

// Expirer deletes events last written more than TTL ago.
type Expirer struct {
	Store Store
	TTL   time.Duration // negative: keep events forever
	Clock clock.Clock
	Log   *slog.Logger
}

// Run expires events once a minute (or every TTL if shorter) until ctx
// ends.
func (e *Expirer) Run(ctx context.Context) {
	if e.TTL < 0 {
		return
	}
	every := min(time.Minute, e.TTL)
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.Clock.After(every):
		}
		if err := e.ExpireOnce(ctx); err != nil {
			e.Log.Warn("expire events", "err", err)
		}
	}
}

// ExpireOnce deletes the events last written before now minus TTL, a page
// at a time. A failed delete is logged and the pass goes on.
func (e *Expirer) ExpireOnce(ctx context.Context) error {
	cutoff := e.Clock.Now().Add(-e.TTL)
	after := ""
	for {
		events, next, err := e.Store.Events(ctx, after, PageSize)
		if err != nil {
			return fmt.Errorf("listing events: %w", err)
		}
		for _, ev := range events {
			if !LastWrite(ev).Before(cutoff) {
				continue
			}
			if err := e.Store.Delete(ctx, ev.Namespace, ev.Name); err != nil {
				e.Log.Warn("expire event", "namespace", ev.Namespace, "name", ev.Name, "err", err)
			}
		}
		if next == "" {
			return nil
		}
		after = next
	}
}

// LastWrite is the latest time an event records.
func LastWrite(ev *corev1.Event) time.Time {
	t := ev.CreationTimestamp.Time
	for _, c := range []time.Time{ev.LastTimestamp.Time, ev.EventTime.Time} {
		if c.After(t) {
			t = c
		}
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(t) {
		t = ev.Series.LastObservedTime.Time
	}
	return t
}
