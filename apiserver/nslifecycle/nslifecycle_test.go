package nslifecycle

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeStore holds namespaces and pods; a pod with a finalizer stays when
// deleted (it gets a deletionTimestamp).
type fakeStore struct {
	namespaces map[string]*corev1.Namespace
	pods       map[string]*corev1.Pod // by name, all in the namespace synced
	removed    []string
}

func (f *fakeStore) Namespaces(context.Context) ([]*corev1.Namespace, error) {
	var out []*corev1.Namespace
	for _, ns := range f.namespaces {
		out = append(out, ns.DeepCopy())
	}
	return out, nil
}

func (f *fakeStore) Namespace(_ context.Context, name string) (*corev1.Namespace, error) {
	ns, ok := f.namespaces[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
	}
	return ns.DeepCopy(), nil
}

func (f *fakeStore) Resources() []*registry.Resource { return []*registry.Resource{registry.Pods()} }

func (f *fakeStore) Objects(context.Context, *registry.Resource, string) ([]metav1.Object, error) {
	var out []metav1.Object
	for _, p := range f.pods {
		out = append(out, p)
	}
	return out, nil
}

func (f *fakeStore) Delete(_ context.Context, _ *registry.Resource, _, name string) (bool, error) {
	p := f.pods[name]
	if len(p.Finalizers) > 0 {
		now := metav1.Now()
		p.DeletionTimestamp = &now
		return false, nil
	}
	delete(f.pods, name)
	return true, nil
}

func (f *fakeStore) Write(_ context.Context, ns *corev1.Namespace) error {
	f.namespaces[ns.Name] = ns
	return nil
}

func (f *fakeStore) Remove(_ context.Context, ns *corev1.Namespace) error {
	delete(f.namespaces, ns.Name)
	f.removed = append(f.removed, ns.Name)
	return nil
}

func TestSync(t *testing.T) {
	deleting := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	ns := func(terminating bool, specFinalizers, finalizers []string) *corev1.Namespace {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Finalizers: finalizers},
			Spec: corev1.NamespaceSpec{Finalizers: make([]corev1.FinalizerName, 0, len(specFinalizers))}}
		for _, f := range specFinalizers {
			n.Spec.Finalizers = append(n.Spec.Finalizers, corev1.FinalizerName(f))
		}
		if terminating {
			n.DeletionTimestamp = &deleting
		}
		return n
	}
	pod := func(name string, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Finalizers: finalizers}}
	}
	cases := map[string]struct {
		ns          *corev1.Namespace
		pods        []*corev1.Pod
		wantPods    []string
		wantRemoved bool
		wantSpec    int // spec finalizers left, if not removed
	}{
		"active namespace untouched": {ns: ns(false, []string{"kubernetes"}, nil), pods: []*corev1.Pod{pod("a")},
			wantPods: []string{"a"}, wantSpec: 1},
		"empty: removed": {ns: ns(true, []string{"kubernetes"}, nil), wantRemoved: true},
		"content deleted, namespace removed in the same pass": {ns: ns(true, []string{"kubernetes"}, nil),
			pods: []*corev1.Pod{pod("a"), pod("b")}, wantRemoved: true},
		"empty, metadata finalizer: finalized, stays": {ns: ns(true, []string{"kubernetes"}, []string{"other"}), wantSpec: 0},
		"content with finalizers: waits": {ns: ns(true, []string{"kubernetes"}, nil),
			pods: []*corev1.Pod{pod("a"), pod("b", "x")}, wantPods: []string{"b"}, wantSpec: 1},
		"finalized, metadata finalizer: stays": {ns: ns(true, nil, []string{"other"}), wantSpec: 0},
		"finalized, no finalizers: removed":    {ns: ns(true, nil, nil), wantRemoved: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			store := &fakeStore{namespaces: map[string]*corev1.Namespace{"ns": tc.ns}, pods: map[string]*corev1.Pod{}}
			for _, p := range tc.pods {
				store.pods[p.Name] = p
			}
			l := New(store, time.Second, clocktesting.NewFakeClock(deleting.Time), slog.New(slog.DiscardHandler))
			l.Sync(context.Background())
			var pods []string
			for name := range store.pods {
				pods = append(pods, name)
			}
			slices.Sort(pods)
			if !slices.Equal(pods, tc.wantPods) {
				t.Errorf("pods left %v, want %v", pods, tc.wantPods)
			}
			got, ok := store.namespaces["ns"]
			if removed := !ok; removed != tc.wantRemoved {
				t.Fatalf("namespace removed %v, want %v", removed, tc.wantRemoved)
			}
			if ok && len(got.Spec.Finalizers) != tc.wantSpec {
				t.Errorf("spec finalizers %v, want %d", got.Spec.Finalizers, tc.wantSpec)
			}
		})
	}
}
