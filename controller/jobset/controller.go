package jobset

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// EventRecorder is the part of client-go's record.EventRecorder the
// controller uses.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// Options holds the controller's injected dependencies. Zero values get
// defaults: the real clock, slog.Default(), no metrics registration, and an
// events.k8s.io/v1 recorder with reporting controller "jobset" (see
// newEventRecorder).
type Options struct {
	Clock      clock.Clock
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Recorder   EventRecorder
}

// Controller reconciles JobSets into child Jobs and a headless Service.
type Controller struct {
	kube    kubernetes.Interface
	jobsets dynamic.NamespaceableResourceInterface

	kubeInformers  informers.SharedInformerFactory
	dynInformers   dynamicinformer.DynamicSharedInformerFactory
	jobLister      batchlisters.JobLister
	serviceLister  corelisters.ServiceLister
	informerSynced []cache.InformerSynced

	queue       workqueue.TypedRateLimitingInterface[string]
	clock       clock.Clock
	log         *slog.Logger
	recorder    EventRecorder
	broadcaster events.EventBroadcaster
	metrics     *metrics
}

// NewController wires the controller to its clients and informers. The
// informers are registered here; Run starts the factories.
func NewController(kube kubernetes.Interface, dyn dynamic.Interface, kubeInformers informers.SharedInformerFactory,
	dynInformers dynamicinformer.DynamicSharedInformerFactory, opts Options) (*Controller, error) {
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		kube:          kube,
		jobsets:       dyn.Resource(GroupVersionResource),
		kubeInformers: kubeInformers,
		dynInformers:  dynInformers,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "jobset"}),
		clock:    opts.Clock,
		log:      opts.Logger,
		recorder: opts.Recorder,
		metrics:  m,
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.recorder == nil {
		c.broadcaster, c.recorder = newEventRecorder(kube)
	}
	if err := c.registerInformers(); err != nil {
		return nil, err
	}
	return c, nil
}

func eventScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(jobsetapi.AddToScheme(s))
	return s
}

func (c *Controller) registerInformers() error {
	jsInformer := c.dynInformers.ForResource(GroupVersionResource).Informer()
	jobInformer := c.kubeInformers.Batch().V1().Jobs()
	svcInformer := c.kubeInformers.Core().V1().Services()
	c.jobLister = jobInformer.Lister()
	c.serviceLister = svcInformer.Lister()
	handlers := []struct {
		inf cache.SharedIndexInformer
		fn  func(obj interface{})
	}{
		{jsInformer, c.enqueueJobSet},
		{jobInformer.Informer(), c.enqueueOwner},
		{svcInformer.Informer(), c.enqueueOwner},
	}
	for _, h := range handlers {
		fn := h.fn
		_, err := h.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    fn,
			UpdateFunc: func(_, obj interface{}) { fn(obj) },
			DeleteFunc: fn,
		})
		if err != nil {
			return fmt.Errorf("add jobset event handler: %w", err)
		}
		c.informerSynced = append(c.informerSynced, h.inf.HasSynced)
	}
	return nil
}

func (c *Controller) enqueueJobSet(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		c.log.Error("computing jobset key", "err", err)
		return
	}
	c.queue.Add(key)
}

// enqueueOwner queues the JobSet that controls a Job or Service.
func (c *Controller) enqueueOwner(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	meta, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(meta)
	if ref == nil || ref.Kind != jobSetKind || ref.APIVersion != jobsetapi.GroupVersion.String() {
		return
	}
	c.queue.Add(meta.GetNamespace() + "/" + ref.Name)
}

// Run starts the informers and workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if c.broadcaster != nil {
		if err := c.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
			return fmt.Errorf("jobset controller: start recording events: %w", err)
		}
		defer c.broadcaster.Shutdown()
	}
	c.kubeInformers.Start(ctx.Done())
	c.dynInformers.Start(ctx.Done())
	c.log.Info("starting jobset controller", "workers", workers)
	if !cache.WaitForCacheSync(ctx.Done(), c.informerSynced...) {
		return fmt.Errorf("jobset controller: waiting for caches to sync: %w", ctx.Err())
	}
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
	c.log.Info("stopping jobset controller")
	return nil
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	requeueAfter, err := c.sync(ctx, key)
	switch {
	case apierrors.IsConflict(err):
		// Optimistic concurrency: routine, retry with the fresh object.
		c.log.Debug("conflict reconciling jobset", "key", key, "err", err)
		c.queue.AddRateLimited(key)
	case err != nil:
		c.log.Error("reconciling jobset", "key", key, "err", err)
		c.queue.AddRateLimited(key)
	default:
		c.queue.Forget(key)
		if requeueAfter > 0 {
			c.queue.AddAfter(key, requeueAfter)
		}
	}
	return true
}

// jobsFor lists the Jobs labelled with the JobSet's name that it controls.
func (c *Controller) jobsFor(js *jobsetapi.JobSet) ([]*batchv1.Job, error) {
	sel := metav1.LabelSelector{MatchLabels: map[string]string{jobsetapi.JobSetNameKey: js.Name}}
	selector, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil {
		return nil, fmt.Errorf("build job selector: %w", err)
	}
	all, err := c.jobLister.Jobs(js.Namespace).List(selector)
	if err != nil {
		return nil, fmt.Errorf("list jobs of jobset %s/%s: %w", js.Namespace, js.Name, err)
	}
	var owned []*batchv1.Job
	for _, job := range all {
		if isOwnedBy(job, js) {
			owned = append(owned, job)
		}
	}
	return owned, nil
}
