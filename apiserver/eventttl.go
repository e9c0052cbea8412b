package apiserver

import (
	"context"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/apiserver/eventttl"
	"github.com/batchlet/batchlet/storage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// eventStore gives the event expiry loop the stored events, decoded, and
// deletes through the server's delete path (watchers see the deletion).
type eventStore struct{ s *Server }

var _ eventttl.Store = eventStore{}

func (e eventStore) Events(ctx context.Context, after string, limit int) ([]*corev1.Event, string, error) {
	res := e.s.resource("", "v1", "events")
	page, err := e.s.store.List(ctx, genericstore.KeyPrefix(res, ""), storage.ListOptions{Limit: int64(limit), After: after})
	if err != nil {
		return nil, "", err
	}
	events := make([]*corev1.Event, 0, len(page.Items))
	for _, kv := range page.Items {
		ev := &corev1.Event{}
		if err := genericstore.DecodeValue(kv.Value, ev); err != nil {
			e.s.log.Warn("decode event for expiry", "key", kv.Key, "err", err)
			continue
		}
		events = append(events, ev)
	}
	next := ""
	if page.More && len(page.Items) > 0 {
		next = page.Items[len(page.Items)-1].Key
	}
	return events, next, nil
}

func (e eventStore) Delete(ctx context.Context, namespace, name string) error {
	res := e.s.resource("", "v1", "events")
	if _, _, err := e.s.deleteObject(ctx, res, namespace, name, &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
