package apiserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/apiserver/eventttl"
	"github.com/batchlet/batchlet/storage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// eventStore gives the event expiry loop the stored events (decoded only
// when it starts, otherwise their keys and revisions) and deletes them
// through the API server's delete path.
type eventStore struct {
	s *Server
	// page is how many event keys one read transaction of WrittenIn walks
	// (0: eventVisitPage).
	page int64
}

var _ eventttl.Store = eventStore{}

// eventVisitPage is how many event keys one read transaction of WrittenIn
// walks by default, so that a long walk does not hold the store's read
// view.
const eventVisitPage = 10000

func (e eventStore) prefix() string {
	return genericstore.KeyPrefix(e.s.resource("", "v1", "events"), "")
}

func (e eventStore) CurrentRevision() int64 { return e.s.store.CurrentRevision() }

func (e eventStore) Events(ctx context.Context, after string, limit int) ([]eventttl.Stored, string, error) {
	prefix := e.prefix()
	page, err := e.s.store.List(ctx, prefix, storage.ListOptions{Limit: int64(limit), After: after})
	if err != nil {
		return nil, "", err
	}
	events := make([]eventttl.Stored, 0, len(page.Items))
	for _, kv := range page.Items {
		ev := &corev1.Event{}
		if err := genericstore.DecodeValue(kv.Value, ev); err != nil {
			e.s.log.Warn("decode event for expiry", "key", kv.Key, "err", err)
			continue
		}
		events = append(events, eventttl.Stored{Ref: eventttl.Ref{Namespace: ev.Namespace, Name: ev.Name, Revision: kv.ModRevision}, Event: ev})
	}
	next := ""
	if page.More && len(page.Items) > 0 {
		next = page.Items[len(page.Items)-1].Key
	}
	return events, next, nil
}

// WrittenIn walks the event keys without decoding or copying the values;
// only the events in the range get their names copied out.
func (e eventStore) WrittenIn(ctx context.Context, from, to int64) ([]eventttl.Ref, error) {
	prefix, limit := e.prefix(), e.page
	if limit == 0 {
		limit = eventVisitPage
	}
	var refs []eventttl.Ref
	after := ""
	var last []byte // the walk's last key, copied: keys are lent for the call
	for {
		last = last[:0]
		page, err := e.s.store.Visit(ctx, prefix, storage.ListOptions{Limit: limit, After: after}, func(key []byte, kv storage.KeyValue) (bool, error) {
			last = append(last[:0], key...)
			if kv.ModRevision <= from || kv.ModRevision > to {
				return false, nil
			}
			namespace, name, ok := strings.Cut(string(key[len(prefix):]), "/")
			if !ok {
				return false, fmt.Errorf("event key %q has no namespace", key)
			}
			refs = append(refs, eventttl.Ref{Namespace: namespace, Name: name, Revision: kv.ModRevision})
			return false, nil
		})
		if err != nil {
			return nil, err
		}
		if !page.More || len(last) == 0 {
			return refs, nil
		}
		after = string(last)
	}
}

func (e eventStore) Delete(ctx context.Context, ref eventttl.Ref) error {
	res := e.s.resource("", "v1", "events")
	rv := strconv.FormatInt(ref.Revision, 10)
	_, _, err := e.s.deleteObject(ctx, res, ref.Namespace, ref.Name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}
