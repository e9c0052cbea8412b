package dashboard

import (
	"fmt"
	"slices"
	"sync/atomic"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetinformers "sigs.k8s.io/jobset/client-go/informers/externalversions"
)

// Index names of the dashboard's informers.
const (
	byJob      = "dashboard/job"      // pods: namespace/job-name label
	byJobSet   = "dashboard/jobset"   // jobs: namespace/jobset-name label
	byInvolved = "dashboard/involved" // events: namespace/Kind/name
)

// jobNameLabel is the label the Job controller puts on its pods.
const jobNameLabel = batchv1.JobNameLabel

// store is what the pages read: the informers' caches.
type store struct {
	jobs, pods, events, jobsets cache.SharedIndexInformer
	synced                      []cache.InformerSynced
	ready                       atomic.Bool
}

func newStore(f informers.SharedInformerFactory, jf jobsetinformers.SharedInformerFactory, changes *broadcaster) (*store, error) {
	s := &store{
		jobs:    f.Batch().V1().Jobs().Informer(),
		pods:    f.Core().V1().Pods().Informer(),
		events:  f.Core().V1().Events().Informer(),
		jobsets: jf.Jobset().V1alpha2().JobSets().Informer(),
	}
	indexers := []struct {
		inf  cache.SharedIndexInformer
		name string
		fn   cache.IndexFunc
	}{
		{s.pods, byJob, labelIndex(jobNameLabel)},
		{s.jobs, byJobSet, labelIndex(jobsetv1alpha2.JobSetNameKey)},
		{s.events, byInvolved, involvedIndex},
	}
	for _, ix := range indexers {
		if err := ix.inf.AddIndexers(cache.Indexers{ix.name: ix.fn}); err != nil {
			return nil, fmt.Errorf("dashboard indexer %s: %w", ix.name, err)
		}
	}
	for kind, inf := range map[string]cache.SharedIndexInformer{"jobs": s.jobs, "pods": s.pods, "events": s.events, "jobsets": s.jobsets} {
		reg, err := inf.AddEventHandler(changes.handler(kind))
		if err != nil {
			return nil, fmt.Errorf("dashboard %s handler: %w", kind, err)
		}
		s.synced = append(s.synced, reg.HasSynced)
	}
	return s, nil
}

func (s *store) markReady()    { s.ready.Store(true) }
func (s *store) isReady() bool { return s.ready.Load() }

func labelIndex(label string) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		m, err := metaOf(obj)
		if err != nil {
			return nil, err
		}
		v, ok := m.GetLabels()[label]
		if !ok {
			return nil, nil
		}
		return []string{m.GetNamespace() + "/" + v}, nil
	}
}

func involvedIndex(obj any) ([]string, error) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return nil, nil
	}
	o := e.InvolvedObject
	return []string{involvedKey(o.Namespace, o.Kind, o.Name)}, nil
}

func involvedKey(ns, kind, name string) string { return ns + "/" + kind + "/" + name }

func (s *store) listJobs() []*batchv1.Job {
	return typed[*batchv1.Job](s.jobs.GetStore().List())
}

func (s *store) listJobSets() []*jobsetv1alpha2.JobSet {
	return typed[*jobsetv1alpha2.JobSet](s.jobsets.GetStore().List())
}

func (s *store) job(ns, name string) (*batchv1.Job, bool) {
	return get[*batchv1.Job](s.jobs, ns, name)
}

func (s *store) jobSet(ns, name string) (*jobsetv1alpha2.JobSet, bool) {
	return get[*jobsetv1alpha2.JobSet](s.jobsets, ns, name)
}

// podsOf are the pods j controls: an earlier Job of the same name may
// have left pods with the same job-name label.
func (s *store) podsOf(j *batchv1.Job) []*corev1.Pod {
	return slices.DeleteFunc(byIndex[*corev1.Pod](s.pods, byJob, j.Namespace+"/"+j.Name), func(p *corev1.Pod) bool {
		return !metav1.IsControlledBy(p, j)
	})
}

// jobsOf are the Jobs js controls.
func (s *store) jobsOf(js *jobsetv1alpha2.JobSet) []*batchv1.Job {
	return slices.DeleteFunc(byIndex[*batchv1.Job](s.jobs, byJobSet, js.Namespace+"/"+js.Name), func(j *batchv1.Job) bool {
		return !metav1.IsControlledBy(j, js)
	})
}

// eventsOf are the events of obj (not of an earlier object of its name).
func (s *store) eventsOf(obj metav1.Object, kind string) []*corev1.Event {
	return slices.DeleteFunc(byIndex[*corev1.Event](s.events, byInvolved, involvedKey(obj.GetNamespace(), kind, obj.GetName())), func(e *corev1.Event) bool {
		return e.InvolvedObject.UID != "" && e.InvolvedObject.UID != obj.GetUID()
	})
}

func typed[T any](objs []any) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

func get[T any](inf cache.SharedIndexInformer, ns, name string) (T, bool) {
	var zero T
	o, ok, err := inf.GetStore().GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return zero, false
	}
	t, ok := o.(T)
	return t, ok
}

func byIndex[T any](inf cache.SharedIndexInformer, index, key string) []T {
	objs, err := inf.GetIndexer().ByIndex(index, key)
	if err != nil {
		return nil
	}
	return typed[T](objs)
}
