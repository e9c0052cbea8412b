package apiserver

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
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

func (s *Server) expireEvents(ctx context.Context) {
	res := s.resource("", "v1", "events")
	all := &filter{res: res, labels: labels.Everything(), fields: fields.Everything()}
	lr, err := s.listObjects(ctx, res, "", all, 0, "", "", "")
	if err != nil {
		s.log.Warn("list events for expiry", "err", err)
		return
	}
	cutoff := s.clock.Now().Add(-s.cfg.EventTTL)
	for _, obj := range lr.items {
		ev := obj.(*corev1.Event)
		if !eventLastWrite(ev).Before(cutoff) {
			continue
		}
		if _, _, err := s.deleteObject(ctx, res, ev.Namespace, ev.Name, &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			s.log.Warn("expire event", "namespace", ev.Namespace, "name", ev.Name, "err", err)
		}
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
