package strategy

import (
	"time"

	"github.com/batchlet/batchlet/apiserver/genericstore"
	"github.com/batchlet/batchlet/apiserver/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PrepareForDelete marks obj (a copy of the stored object) for a delete
// with opts, as rest.BeforeDelete does: the resource's own hook, the
// propagation finalizers, then graceful deletion. It returns true when the
// object must stay, updated, instead of going now (a grace period or
// finalizers left).
func (s Strategy) PrepareForDelete(obj runtime.Object, opts *metav1.DeleteOptions) (pending bool) {
	if s.res.PrepareForDelete != nil {
		s.res.PrepareForDelete(obj)
	}
	m := genericstore.Accessor(obj)
	switch propagation(s.res, opts) {
	case metav1.DeletePropagationOrphan:
		m.SetFinalizers(withFinalizer(withoutFinalizer(m.GetFinalizers(), metav1.FinalizerDeleteDependents), metav1.FinalizerOrphanDependents))
	case metav1.DeletePropagationForeground:
		m.SetFinalizers(withFinalizer(withoutFinalizer(m.GetFinalizers(), metav1.FinalizerOrphanDependents), metav1.FinalizerDeleteDependents))
	case metav1.DeletePropagationBackground:
		if m.GetDeletionTimestamp() == nil {
			m.SetFinalizers(withoutFinalizer(withoutFinalizer(m.GetFinalizers(), metav1.FinalizerOrphanDependents), metav1.FinalizerDeleteDependents))
		}
	}
	now := s.clock.Now()
	grace, graceful := int64(0), false
	if s.res.GracefulDelete != nil {
		grace, graceful = s.res.GracefulDelete(obj, opts.GracePeriodSeconds)
	}
	if graceful {
		if old := m.GetDeletionGracePeriodSeconds(); m.GetDeletionTimestamp() == nil || (old != nil && grace < *old) {
			ts := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
			m.SetDeletionTimestamp(&ts)
			m.SetDeletionGracePeriodSeconds(&grace)
		}
		return true
	}
	if len(m.GetFinalizers()) == 0 {
		return false
	}
	if ts := m.GetDeletionTimestamp(); ts == nil || ts.Time.After(now) {
		// Shortening a pending graceful deletion to zero moves it to now.
		nowTS := metav1.NewTime(now)
		m.SetDeletionTimestamp(&nowTS)
	}
	zero := int64(0)
	m.SetDeletionGracePeriodSeconds(&zero)
	return true
}

// propagation is the delete's propagation policy: the request's, the
// deprecated orphanDependents, or the resource's default ("" leaves the
// finalizers as they are).
func propagation(res *registry.Resource, opts *metav1.DeleteOptions) metav1.DeletionPropagation {
	switch {
	case opts.PropagationPolicy != nil:
		return *opts.PropagationPolicy
	//lint:ignore SA1019 kube-apiserver still honours the deprecated orphanDependents for older clients; so do we
	case opts.OrphanDependents != nil && *opts.OrphanDependents:
		return metav1.DeletePropagationOrphan
	//lint:ignore SA1019 kube-apiserver still honours the deprecated orphanDependents for older clients; so do we
	case opts.OrphanDependents != nil:
		return metav1.DeletePropagationBackground
	case res.OrphanByDefault:
		return metav1.DeletePropagationOrphan
	}
	return ""
}

func withFinalizer(fs []string, f string) []string {
	for _, x := range fs {
		if x == f {
			return fs
		}
	}
	return append(fs, f)
}

func withoutFinalizer(fs []string, f string) []string {
	out := fs[:0:0]
	for _, x := range fs {
		if x != f {
			out = append(out, x)
		}
	}
	return out
}
