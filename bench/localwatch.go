package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/batchlet/batchlet/controlplane"
)

// startLocal opens the observer's watches on the embedded store.
func (o *jobObserver) startLocal(ctx context.Context, local controlplane.LocalSource, rv, ns, name string) error {
	jobs, err := local.LocalListerWatcher(schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, ns, false,
		func(opts *metav1.ListOptions) { opts.FieldSelector = "metadata.name=" + name })
	if err != nil {
		return fmt.Errorf("watch jobs: %w", err)
	}
	o.followLocal(ctx, jobs, rv, func(now time.Time, obj runtime.Object) {
		if job, ok := obj.(*batchv1.Job); ok {
			o.jobSeen(now, job)
		}
	})
	if !o.trackPods {
		return nil
	}
	pods, err := local.LocalListerWatcher(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, ns, false,
		func(opts *metav1.ListOptions) { opts.LabelSelector = batchv1.JobNameLabel + "=" + name })
	if err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	o.followLocal(ctx, pods, rv, func(now time.Time, obj runtime.Object) {
		if pod, ok := obj.(*corev1.Pod); ok {
			o.podSeen(now, pod.Annotations[batchv1.JobCompletionIndexAnnotation], pod.Status.Phase)
		}
	})
	return nil
}

// followLocal runs a local watch from rv in the background, resuming from
// the last seen resource version when it ends, until ctx ends. fn gets the
// arrival time and the (shared, read-only) object of every
// ADDED/MODIFIED/DELETED event.
func (o *jobObserver) followLocal(ctx context.Context, lw cache.ListerWatcherWithContext, rv string, fn func(time.Time, runtime.Object)) {
	followLocal(ctx, &o.wg, o.fail, lw, rv, fn)
}

// followLocal is jobObserver.followLocal for any observer: wg tracks the
// goroutine and fail receives the watch's error.
func followLocal(ctx context.Context, wg *sync.WaitGroup, fail func(error), lw cache.ListerWatcherWithContext, rv string, fn func(time.Time, runtime.Object)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				if ctx.Err() == nil {
					fail(fmt.Errorf("open watch at %s: %w", rv, err))
				}
				return
			}
			for ev := range w.ResultChan() {
				now := time.Now()
				if ev.Type == watch.Error {
					w.Stop()
					fail(fmt.Errorf("watch error: %v", ev.Object))
					return
				}
				if m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != "" {
					rv = m.GetResourceVersion()
				}
				if ev.Type != watch.Bookmark {
					fn(now, ev.Object)
				}
			}
			w.Stop()
		}
	}()
}
