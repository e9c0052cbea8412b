// Package eventttl expires events, as kube-apiserver does with etcd leases
// (--event-ttl): an event not written for the TTL is deleted.
//
// It is a loop outside the request path: the API server starts it with a
// Store over its storage and never calls it while serving a request.
//
// A pass does not decode the stored events. Each pass marks the store's
// current revision with the time; an event whose last write revision is at
// or below a mark taken before now minus the TTL was last written more than
// the TTL ago, as an etcd lease attached at each write would have it. Only
// the events already stored when the loop starts (their write times are
// not known) are decoded, once, and expire by the latest time they record
// (LastWrite).
package eventttl

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// PageSize is how many stored events the first pass decodes at a time.
const PageSize = 500

// Ref names a stored event and the store revision of its last write.
type Ref struct {
	Namespace, Name string
	Revision        int64
}

// Stored is a decoded stored event.
type Stored struct {
	Ref
	Event *corev1.Event
}

// Store is what the loop needs from the API server's storage.
type Store interface {
	// CurrentRevision is the revision of the store's latest write.
	CurrentRevision() int64
	// Events lists up to limit stored events, decoded, after the storage
	// key after ("" from the start); next is the key to continue from, ""
	// when done.
	Events(ctx context.Context, after string, limit int) (events []Stored, next string, err error)
	// WrittenIn lists the stored events last written at a revision in
	// (from, to], without decoding them.
	WrittenIn(ctx context.Context, from, to int64) ([]Ref, error)
	// Delete deletes an event if it is still at ref.Revision; an event
	// gone or written since is no error.
	Delete(ctx context.Context, ref Ref) error
}

// Expirer deletes events last written more than TTL ago.
type Expirer struct {
	Store Store
	TTL   time.Duration // negative: keep events forever
	Clock clock.Clock
	Log   *slog.Logger

	mu      sync.Mutex
	started bool
	// baseRev is the revision when the loop started: events at or below
	// it are in before, sorted by their LastWrite, oldest first.
	baseRev int64
	before  []dated
	// marks are (time, current revision) taken at each pass, oldest first,
	// trimmed to the newest one older than the cutoff.
	marks []dated
}

// dated is a revision (and for events stored before the start, the event)
// with the time it was written at or before.
type dated struct {
	at  time.Time
	ref Ref
}

// Run expires events once a minute (or every TTL if shorter) until ctx
// ends.
func (e *Expirer) Run(ctx context.Context) {
	if e.TTL < 0 {
		return
	}
	every := min(time.Minute, e.TTL)
	for {
		if err := e.ExpireOnce(ctx); err != nil {
			e.Log.Warn("expire events", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-e.Clock.After(every):
		}
	}
}

// ExpireOnce marks the current revision and deletes the events last
// written before now minus TTL. A failed delete is logged and the pass
// goes on; the next pass tries it again.
func (e *Expirer) ExpireOnce(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	now, rev := e.Clock.Now(), e.Store.CurrentRevision()
	if !e.started {
		if err := e.loadBefore(ctx, rev); err != nil {
			return err
		}
		e.started, e.baseRev = true, rev
	}
	if len(e.marks) == 0 || e.marks[len(e.marks)-1].ref.Revision != rev {
		// With no write since the last mark, the older mark says more.
		e.marks = append(e.marks, dated{at: now, ref: Ref{Revision: rev}})
	}
	cutoff := now.Add(-e.TTL)
	e.expireBefore(ctx, cutoff)
	upTo, ok := e.revisionBefore(cutoff)
	if !ok || upTo <= e.baseRev {
		return nil
	}
	refs, err := e.Store.WrittenIn(ctx, e.baseRev, upTo)
	if err != nil {
		return fmt.Errorf("listing events written up to revision %d: %w", upTo, err)
	}
	for _, ref := range refs {
		e.delete(ctx, ref)
	}
	return nil
}

// revisionBefore is the newest marked revision taken before cutoff: every
// write at or below it happened more than the TTL ago. Older marks are
// dropped.
func (e *Expirer) revisionBefore(cutoff time.Time) (int64, bool) {
	i := -1
	for i+1 < len(e.marks) && e.marks[i+1].at.Before(cutoff) {
		i++
	}
	if i < 0 {
		return 0, false
	}
	e.marks = e.marks[i:]
	return e.marks[0].ref.Revision, true
}

// loadBefore decodes the events stored before the loop starts, a page at a
// time, keeping only their refs and LastWrite.
func (e *Expirer) loadBefore(ctx context.Context, rev int64) error {
	e.before = nil
	after := ""
	for {
		events, next, err := e.Store.Events(ctx, after, PageSize)
		if err != nil {
			return fmt.Errorf("listing events: %w", err)
		}
		for _, ev := range events {
			if ev.Revision <= rev {
				e.before = append(e.before, dated{at: LastWrite(ev.Event), ref: ev.Ref})
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	slices.SortStableFunc(e.before, func(a, b dated) int { return a.at.Compare(b.at) })
	return nil
}

// expireBefore deletes the events stored before the start whose LastWrite
// is before cutoff; those it failed to delete stay for the next pass.
func (e *Expirer) expireBefore(ctx context.Context, cutoff time.Time) {
	var failed []dated
	n := 0
	for ; n < len(e.before) && e.before[n].at.Before(cutoff); n++ {
		if !e.delete(ctx, e.before[n].ref) {
			failed = append(failed, e.before[n])
		}
	}
	e.before = e.before[n:]
	if len(failed) > 0 {
		e.before = append(failed, e.before...)
	}
	if len(e.before) == 0 {
		e.before = nil // let the start's array go
	}
}

func (e *Expirer) delete(ctx context.Context, ref Ref) bool {
	if err := e.Store.Delete(ctx, ref); err != nil {
		e.Log.Warn("expire event", "namespace", ref.Namespace, "name", ref.Name, "err", err)
		return false
	}
	return true
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
