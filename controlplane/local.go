package controlplane

import (
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/batchlet/batchlet/apiserver"
	gccontroller "github.com/batchlet/batchlet/controller/gc"
)

// LocalSource serves informers from the API server's own store in the same
// process (apiserver.Server.LocalListerWatcher): the embedded control plane's
// informers then skip HTTP and JSON and share one decoded copy per object
// version. A nil LocalSource means informers talk to the API over client-go.
type LocalSource interface {
	LocalListerWatcher(gvr schema.GroupVersionResource, namespace string, metadataOnly bool, tweak func(*metav1.ListOptions)) (apiserver.ListerWatcher, error)
}

// localKind is a typed informer served locally.
type localKind struct {
	obj runtime.Object
	gvr schema.GroupVersionResource
}

var (
	localPods  = localKind{&corev1.Pod{}, corev1.SchemeGroupVersion.WithResource("pods")}
	localJobs  = localKind{&batchv1.Job{}, batchv1.SchemeGroupVersion.WithResource("jobs")}
	localNodes = localKind{&corev1.Node{}, corev1.SchemeGroupVersion.WithResource("nodes")}
)

// controllerKinds are the informers of the hot paths (pod lifecycle, Jobs,
// scheduling), which every embedded control plane runs.
var controllerKinds = []localKind{localPods, localJobs, localNodes}

// newTypedFactory is a shared informer factory over client whose informers
// of the local kinds come from src when it is set. Registered informers all
// start with the factory, so local names the kinds its users need. tweak
// edits every list and watch, as informers.WithTweakListOptions does.
func newTypedFactory(client kubernetes.Interface, src LocalSource, local []localKind, tweak func(*metav1.ListOptions)) (informers.SharedInformerFactory, error) {
	opts := []informers.SharedInformerOption{informers.WithTransform(trimManagedFields)}
	if tweak != nil {
		opts = append(opts, informers.WithTweakListOptions(tweak))
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	if src == nil {
		return f, nil
	}
	for _, t := range local {
		lw, err := src.LocalListerWatcher(t.gvr, metav1.NamespaceAll, false, tweak)
		if err != nil {
			return nil, err
		}
		f.InformerFor(t.obj, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
			return cache.NewSharedIndexInformer(lw, t.obj, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		})
	}
	return f, nil
}

// trimManagedFields drops metadata.managedFields from informer objects, as
// kube-controller-manager does: no controller reads them. It writes only
// when there is something to drop, since local informers share objects.
func trimManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// newMetadataFactory is a metadata informer factory; with src, its
// informers are served locally.
func newMetadataFactory(client metadata.Interface, src LocalSource) metadatainformer.SharedInformerFactory {
	f := metadatainformer.NewSharedInformerFactory(client, 0)
	if src == nil {
		return f
	}
	return &localMetadataFactory{src: src, fallback: f, informers: map[schema.GroupVersionResource]*localGenericInformer{}}
}

// localMetadataFactory implements metadatainformer.SharedInformerFactory
// with local informers, falling back to the client's for resources the
// server does not serve.
type localMetadataFactory struct {
	src      LocalSource
	fallback metadatainformer.SharedInformerFactory

	mu        sync.Mutex
	informers map[schema.GroupVersionResource]*localGenericInformer
	started   map[schema.GroupVersionResource]bool
	wg        sync.WaitGroup
	shutdown  bool
}

type localGenericInformer struct {
	informer cache.SharedIndexInformer
	gvr      schema.GroupVersionResource
}

func (i *localGenericInformer) Informer() cache.SharedIndexInformer { return i.informer }
func (i *localGenericInformer) Lister() cache.GenericLister {
	return cache.NewGenericLister(i.informer.GetIndexer(), i.gvr.GroupResource())
}

// ForResource implements metadatainformer.SharedInformerFactory.
func (f *localMetadataFactory) ForResource(gvr schema.GroupVersionResource) informers.GenericInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inf, ok := f.informers[gvr]; ok {
		return inf
	}
	lw, err := f.src.LocalListerWatcher(gvr, metav1.NamespaceAll, true, nil)
	if err != nil {
		return f.fallback.ForResource(gvr)
	}
	inf := &localGenericInformer{gvr: gvr, informer: cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}
	f.informers[gvr] = inf
	return inf
}

var _ gccontroller.UnsharedInformers = (*localMetadataFactory)(nil)

// NewMetadataInformer implements gc.UnsharedInformers: an informer of
// gvr served locally that the factory neither shares nor starts.
func (f *localMetadataFactory) NewMetadataInformer(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	lw, err := f.src.LocalListerWatcher(gvr, metav1.NamespaceAll, true, nil)
	if err != nil {
		return nil, fmt.Errorf("local metadata informer of %s: %w", gvr, err)
	}
	return cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{}), nil
}

// Start implements metadatainformer.SharedInformerFactory.
func (f *localMetadataFactory) Start(stopCh <-chan struct{}) {
	f.fallback.Start(stopCh)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdown {
		return
	}
	if f.started == nil {
		f.started = map[schema.GroupVersionResource]bool{}
	}
	for gvr, inf := range f.informers {
		if f.started[gvr] {
			continue
		}
		f.started[gvr] = true
		f.wg.Go(func() { inf.informer.Run(stopCh) })
	}
}

// WaitForCacheSync implements metadatainformer.SharedInformerFactory.
func (f *localMetadataFactory) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	res := f.fallback.WaitForCacheSync(stopCh)
	f.mu.Lock()
	var started []*localGenericInformer
	for gvr, inf := range f.informers {
		if f.started[gvr] {
			started = append(started, inf)
		}
	}
	f.mu.Unlock()
	for _, inf := range started {
		res[inf.gvr] = waitSynced(stopCh, inf.informer.HasSynced)
	}
	return res
}

// Shutdown implements metadatainformer.SharedInformerFactory.
func (f *localMetadataFactory) Shutdown() {
	f.mu.Lock()
	f.shutdown = true
	f.mu.Unlock()
	f.fallback.Shutdown()
	f.wg.Wait()
}

// waitSynced polls synced until it is true or stopCh closes (checking at
// least once, so a closed stopCh makes it a non-blocking check).
func waitSynced(stopCh <-chan struct{}, synced cache.InformerSynced) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if synced() {
			return true
		}
		select {
		case <-stopCh:
			return false
		case <-tick.C:
		}
	}
}
