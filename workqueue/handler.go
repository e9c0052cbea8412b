package workqueue

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Response headers of a lease.
const (
	HeaderLease   = "Batchlet-Lease"
	HeaderItem    = "Batchlet-Item"
	HeaderAttempt = "Batchlet-Attempt"
)

// handler serves one pod's queue API under /queue/<token>.
func (m *Manager) handler(ps *podServer, token string) http.Handler {
	prefix := "/queue/" + token
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/queue/")
		if !ok || len(rest) < len(token) || subtle.ConstantTimeCompare([]byte(rest[:len(token)]), []byte(token)) != 1 {
			http.Error(w, "unknown queue token: use $"+EnvURL, http.StatusForbidden)
			return
		}
		op := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, prefix), "/")
		verb, lease, _ := strings.Cut(op, "/")
		switch {
		case op == "" && r.Method == http.MethodGet:
			m.status(w, r, ps)
		case r.Method != http.MethodPost:
			http.Error(w, "use POST", http.StatusMethodNotAllowed)
		case verb == "lease" && lease == "":
			m.lease(w, r, ps)
		case (verb == "complete" || verb == "release") && lease != "":
			m.finish(w, r, ps, verb, lease)
		default:
			http.Error(w, "not found: POST lease, complete/LEASE or release/LEASE", http.StatusNotFound)
		}
	})
}

func (m *Manager) lease(w http.ResponseWriter, r *http.Request, ps *podServer) {
	ctx := r.Context()
	var ended map[string]bool
	if q, last := m.peek(ps.namespace, ps.queue); q != nil && q.Pending() == 0 && len(q.Status.Leases) > 0 {
		if now := m.cfg.Clock.Now(); now.Sub(last) >= sweepInterval {
			m.sweptAt(ps.namespace, ps.queue, now)
			ended = m.endedHolders(ctx, q)
		}
	}
	var (
		l       Lease
		out     Outcome
		item    string
		attempt int32
		leased  int
	)
	err := m.update(ctx, ps.namespace, ps.queue, func(q *WorkQueue) (bool, error) {
		released := q.ReleasePods(func(l Lease) bool { return ended[l.PodUID] })
		var err error
		if l, out, err = q.Lease(ps.pod, m.cfg.Clock.Now()); err != nil {
			return false, err
		}
		if out == Leased {
			item, attempt = q.Spec.Items[l.Item], q.Attempt(l.Item)
		}
		leased = len(q.Status.Leases)
		return out == Leased || released > 0, nil
	})
	if err != nil {
		m.fail(w, ps, "lease", err)
		return
	}
	switch out {
	case Drained:
		w.WriteHeader(http.StatusNoContent)
	case Wait:
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("no free item: %d leased to running pods; retry", leased), http.StatusServiceUnavailable)
	case Leased:
		h := w.Header()
		h.Set(HeaderLease, l.ID)
		h.Set(HeaderItem, strconv.Itoa(int(l.Item)))
		h.Set(HeaderAttempt, strconv.Itoa(int(attempt)))
		h.Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(item))
	}
}

func (m *Manager) finish(w http.ResponseWriter, r *http.Request, ps *podServer, verb, id string) {
	err := m.update(r.Context(), ps.namespace, ps.queue, func(q *WorkQueue) (bool, error) {
		var err error
		if verb == "complete" {
			_, err = q.Complete(id, ps.pod.UID)
		} else {
			_, err = q.Release(id, ps.pod.UID)
		}
		return err == nil, err
	})
	switch {
	case errors.Is(err, ErrLeaseGone):
		http.Error(w, err.Error()+": it was completed or released (the item may be leased again)", http.StatusGone)
	case errors.Is(err, ErrNotYours):
		http.Error(w, err.Error(), http.StatusForbidden)
	case err != nil:
		m.fail(w, ps, verb, err)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// Counts is what GET on the queue's URL answers.
type Counts struct {
	Queue     string `json:"queue"`
	Items     int    `json:"items"`
	Completed int    `json:"completed"`
	Leased    int    `json:"leased"`
	Pending   int    `json:"pending"`
}

func (m *Manager) status(w http.ResponseWriter, r *http.Request, ps *podServer) {
	var c Counts
	// A no-op update reads the queue when nothing is cached.
	err := m.update(r.Context(), ps.namespace, ps.queue, func(q *WorkQueue) (bool, error) {
		c = Counts{Queue: q.Namespace + "/" + q.Name, Items: len(q.Spec.Items), Completed: int(q.Status.CompletedCount),
			Leased: len(q.Status.Leases), Pending: q.Pending()}
		return false, nil
	})
	if err != nil {
		m.fail(w, ps, "status", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(c)
}

func (m *Manager) fail(w http.ResponseWriter, ps *podServer, op string, err error) {
	m.cfg.Logger.Warn("work queue request failed", "namespace", ps.namespace, "name", ps.pod.Name, "queue", ps.queue, "op", op, "err", err.Error())
	code := http.StatusInternalServerError
	if errors.Is(err, errQueueGone) {
		code = http.StatusNotFound
	}
	http.Error(w, op+": "+err.Error(), code)
}
