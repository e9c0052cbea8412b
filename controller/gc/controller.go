package gc

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

var _ controllerctx.Controller = (*Controller)(nil)

// Controller is the garbage collector.
type Controller struct {
	client    metadata.Interface
	factory   metadatainformer.SharedInformerFactory
	resources []Resource
	mapper    *kindMapper
	graph     *graph
	clock     clock.Clock
	log       *slog.Logger
	metrics   *metrics
	synced    []cache.InformerSynced

	// discovery, when set, finds the resources to watch beyond resources
	// (see WatchDiscovered); monitors are those being watched, touched by
	// the discovery loop only.
	discovery     Discoverer
	discoverEvery time.Duration
	monitors      map[schema.GroupVersionResource]monitor

	attemptToDelete workqueue.TypedRateLimitingInterface[types.UID]
	attemptToOrphan workqueue.TypedRateLimitingInterface[types.UID]
}

// Options configure the garbage collector.
type Options struct {
	// Resources it watches; DefaultResources when nil.
	Resources []Resource
	// DiscoveryInterval, when set, makes the collector also watch every
	// resource cc.Client's discovery serves (custom resources), looking
	// again at this interval, as kube-controller-manager's resync does.
	DiscoveryInterval time.Duration
}

// New builds a collector watching opts.Resources through cc's metadata
// informers. Run starts the factory.
func New(cc controllerctx.Context, opts Options) (*Controller, error) {
	cc = cc.WithDefaults()
	resources := opts.Resources
	if resources == nil {
		resources = DefaultResources()
	}
	m, err := newMetrics(cc.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		client: cc.Metadata, factory: cc.MetadataInformers, resources: resources, mapper: newKindMapper(resources),
		clock: cc.Clock, log: cc.Logger.With("controller", "garbagecollector"), metrics: m,
		monitors:        map[schema.GroupVersionResource]monitor{},
		attemptToDelete: newQueue("garbage_collector_attempt_to_delete"),
		attemptToOrphan: newQueue("garbage_collector_attempt_to_orphan"),
	}
	c.graph = newGraph(c.mapper)
	if opts.DiscoveryInterval > 0 && cc.Client != nil {
		c.WatchDiscovered(cc.Client.Discovery(), opts.DiscoveryInterval)
	}
	for _, r := range resources {
		if err := c.watch(r); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func newQueue(name string) workqueue.TypedRateLimitingInterface[types.UID] {
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](5*time.Millisecond, 30*time.Second)
	return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: name})
}

// watch registers event handlers on the informer for r.
func (c *Controller) watch(r Resource) error {
	inf := c.factory.ForResource(r.GVR).Informer()
	if err := inf.SetTransform(trimMetadata); err != nil {
		return fmt.Errorf("watch %s: %w", r.GVR, err)
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onUpsert(r, obj) },
		UpdateFunc: func(_, obj any) { c.onUpsert(r, obj) },
		DeleteFunc: c.onDelete,
	})
	if err != nil {
		return fmt.Errorf("watch %s: %w", r.GVR, err)
	}
	c.synced = append(c.synced, inf.HasSynced)
	return nil
}

func (c *Controller) onUpsert(r Resource, obj any) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	c.schedule(c.graph.observe(r, m))
}

func (c *Controller) onDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	c.schedule(c.graph.forget(m.GetUID()))
}

func (c *Controller) schedule(e enqueue) {
	for _, uid := range e.attemptToDelete {
		c.attemptToDelete.Add(uid)
	}
	for _, uid := range e.attemptToOrphan {
		c.attemptToOrphan.Add(uid)
	}
}

// Run starts the informers and workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.attemptToDelete.ShutDown()
	defer c.attemptToOrphan.ShutDown()
	c.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("garbage collector: wait for caches: %w", ctx.Err())
	}
	c.log.Info("garbage collector synced", "resources", len(c.resources))
	var wg sync.WaitGroup
	if c.discovery != nil {
		wg.Go(func() { c.runDiscovery(ctx) })
	}
	for range max(workers, 1) {
		wg.Go(func() { c.loop(ctx, c.attemptToDelete, c.processDelete) })
		wg.Go(func() { c.loop(ctx, c.attemptToOrphan, c.processOrphan) })
	}
	<-ctx.Done()
	c.attemptToDelete.ShutDown()
	c.attemptToOrphan.ShutDown()
	wg.Wait()
	return nil
}

// loop runs one worker over q until the queue shuts down.
func (c *Controller) loop(ctx context.Context, q workqueue.TypedRateLimitingInterface[types.UID], fn func(context.Context, types.UID) error) {
	for {
		uid, quit := q.Get()
		if quit {
			return
		}
		if err := fn(ctx, uid); err != nil {
			c.metrics.errors.Inc()
			c.log.Info("garbage collector retry", "uid", uid, "err", err)
			q.AddRateLimited(uid)
		} else {
			q.Forget(uid)
		}
		q.Done(uid)
	}
}

// trimMetadata keeps, of an informer's object, only what the collector
// reads (identity, owners, finalizers, deletion), so its caches of objects
// that live long (results, finished Jobs) hold no labels, annotations or
// managed fields. It builds a new object: informers served from the local
// store share theirs.
func trimMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp, OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers,
	}}, nil
}
