package genericstore

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/storage/memory"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
)

func newTestStore(t *testing.T) *Store {
	t.Helper()
	return New(Config{Backend: memory.New(1000), Clock: clocktesting.NewFakeClock(time.Now()), Logger: slog.New(slog.DiscardHandler), BookmarkInterval: time.Minute})
}

func createPod(t *testing.T, s *Store, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	out, err := s.Create(context.Background(), registry.Pods(), pod, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*corev1.Pod)
}

// A name taken makes Create rename when the name was generated, and answer
// AlreadyExists otherwise.
func TestCreate(t *testing.T) {
	s := newTestStore(t)
	createPod(t, s, testPod("p-aaaaa", ""))
	if _, err := s.Create(context.Background(), registry.Pods(), testPod("p-aaaaa", ""), nil); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create of a taken name: %v, want AlreadyExists", err)
	}
	pod := testPod("p-aaaaa", "")
	renamed := 0
	out, err := s.Create(context.Background(), registry.Pods(), pod, func() { renamed++; pod.Name = "p-bbbbb" })
	if err != nil || renamed != 1 || out.(*corev1.Pod).Name != "p-bbbbb" || out.(*corev1.Pod).ResourceVersion == "" {
		t.Fatalf("generated create: %v, renamed %d, %s rv %q", err, renamed, out.(*corev1.Pod).Name, out.(*corev1.Pod).ResourceVersion)
	}
}

func TestGuaranteedUpdate(t *testing.T) {
	setImage := func(image, rv string) func(runtime.Object) (runtime.Object, error) {
		return func(cur runtime.Object) (runtime.Object, error) {
			pod := cur.DeepCopyObject().(*corev1.Pod)
			pod.Spec.Containers[0].Image = image
			pod.ResourceVersion = rv
			return pod, nil
		}
	}
	keep := func(obj, _ runtime.Object) (runtime.Object, error) { return obj, nil }
	cases := map[string]struct {
		rv           func(created *corev1.Pod) string // the update's precondition
		dryRun       bool
		wantConflict bool
		wantImage    string // stored afterwards
	}{
		"unconditional":      {wantImage: "new"},
		"current rv":         {rv: func(created *corev1.Pod) string { return created.ResourceVersion }, wantImage: "new"},
		"stale rv: conflict": {rv: func(*corev1.Pod) string { return "1" }, wantConflict: true, wantImage: "busybox"},
		"dry run":            {dryRun: true, wantImage: "busybox"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newTestStore(t)
			createPod(t, s, testPod("x", ""))
			created := createPod(t, s, testPod("p", ""))
			rv := ""
			if tc.rv != nil {
				rv = tc.rv(created)
			}
			mutate := setImage("new", rv)
			_, err := s.GuaranteedUpdate(context.Background(), registry.Pods(), "default", "p", tc.dryRun, mutate, keep)
			if apierrors.IsConflict(err) != tc.wantConflict || (err != nil && !tc.wantConflict) {
				t.Fatalf("update: %v, want conflict %v", err, tc.wantConflict)
			}
			got, _, err := s.Get(context.Background(), registry.Pods(), "default", "p")
			if err != nil || got.(*corev1.Pod).Spec.Containers[0].Image != tc.wantImage {
				t.Fatalf("stored %v %v, want image %s", got, err, tc.wantImage)
			}
		})
	}
}

// A write that removes the last finalizer of an object being deleted
// deletes it.
func TestWriteDeletesWhenDue(t *testing.T) {
	s := newTestStore(t)
	pod := testPod("p", "")
	pod.Finalizers = []string{"f"}
	now := metav1.Now()
	zero := int64(0)
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, &zero
	createPod(t, s, pod)
	_, err := s.GuaranteedUpdate(context.Background(), registry.Pods(), "default", "p", false, func(cur runtime.Object) (runtime.Object, error) {
		p := cur.DeepCopyObject().(*corev1.Pod)
		p.Finalizers = nil
		return p, nil
	}, func(obj, _ runtime.Object) (runtime.Object, error) { return obj, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(context.Background(), registry.Pods(), "default", "p"); !apierrors.IsNotFound(err) {
		t.Fatalf("get after the last finalizer went: %v, want NotFound", err)
	}
}
