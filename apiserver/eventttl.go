package apiserver

import (
	"context"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runEventTTL deletes events not written for EventTTL, as kube-apiserver's
// event leases do, checking once a minute (or every EventTTL if shorter).
func (s *Server) runEventTTL(ctx context.Context) {
	if s.cfg.EventTTL < 0 {
		return
	}
	every := time.Minute
	if s.cfg.EventTTL < every {
		every = s.cfg.EventTTL
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.clock.After(every):
		}
		s.expireEvents(ctx)
	}
}

// eventTTLPage is how many stored events one expiry step reads at a time.
const eventTTLPage = 500

// expireEvents deletes the events last written before the TTL, reading the
// store a page at a time and decoding only each event's times and name.
func (s *Server) expireEvents(ctx context.Context) {
	res := s.resource("", "v1", "events")
	prefix := keyPrefix(res, "")
	cutoff := s.clock.Now().Add(-s.cfg.EventTTL)
	opts := storage.ListOptions{Limit: eventTTLPage}
	for {
		page, err := s.store.List(ctx, prefix, opts)
		if err != nil {
			s.log.Warn("list events for expiry", "err", err)
			return
		}
		for _, kv := range page.Items {
			opts.After = kv.Key
			s.expireEvent(ctx, res, kv, cutoff)
		}
		if !page.More || len(page.Items) == 0 {
			return
		}
	}
}

// expireEvent deletes the stored event kv if it was last written before
// cutoff.
func (s *Server) expireEvent(ctx context.Context, res *registry.Resource, kv storage.KeyValue, cutoff time.Time) {
	ev := &corev1.Event{}
	if err := decodeValue(kv.Value, ev); err != nil {
		s.log.Warn("decode event for expiry", "key", kv.Key, "err", err)
		return
	}
	if !eventLastWrite(ev).Before(cutoff) {
		return
	}
	ns, name := ev.Namespace, ev.Name
	if _, _, err := s.deleteObject(ctx, res, ns, name, &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		s.log.Warn("expire event", "namespace", ns, "name", name, "err", err)
	}
}

// eventLastWrite is the latest time an event records.
func eventLastWrite(ev *corev1.Event) time.Time {
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
