package jobset

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetclient "sigs.k8s.io/jobset/client-go/clientset/versioned"
	jobsetinformers "sigs.k8s.io/jobset/client-go/informers/externalversions"
	jobsetlisters "sigs.k8s.io/jobset/client-go/listers/jobset/v1alpha2"

	"github.com/batchlet/batchlet/controller/controllerctx"
	"github.com/batchlet/batchlet/controller/internal/ownwrites"
)

var _ controllerctx.Controller = (*Controller)(nil)

// EventRecorder is the part of client-go's record.EventRecorder the
// controller uses.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// Controller reconciles JobSets into child Jobs and a headless Service.
type Controller struct {
	kube    kubernetes.Interface
	jobsets jobsetclient.Interface

	kubeInformers   informers.SharedInformerFactory
	jobsetInformers jobsetinformers.SharedInformerFactory
	jobsetLister    jobsetlisters.JobSetLister
	jobLister       batchlisters.JobLister
	serviceLister   corelisters.ServiceLister
	informerSynced  []cache.InformerSynced

	queue       workqueue.TypedRateLimitingInterface[string]
	clock       clock.Clock
	log         *slog.Logger
	recorder    EventRecorder
	broadcaster events.EventBroadcaster
	metrics     *metrics
	// written holds, per JobSet key, the resourceVersion a status update
	// was based on until the informer shows the update (see getJobSet).
	written *ownwrites.Tracker
}

// New wires the controller to cc's clients and informers. The informers
// are registered here; Run starts the factories.
func New(cc controllerctx.Context) (*Controller, error) {
	cc = cc.WithDefaults()
	m, err := newMetrics(cc.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		kube:            cc.Client,
		jobsets:         cc.JobSetClient,
		kubeInformers:   cc.Informers,
		jobsetInformers: cc.JobSetInformers,
		written:         ownwrites.New(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "jobset"}),
		clock:   cc.Clock,
		log:     cc.Logger,
		metrics: m,
	}
	if cc.Recorder != nil {
		c.recorder = cc.Recorder
	} else {
		c.broadcaster, c.recorder = newEventRecorder(cc.Client)
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
	jsInformer := c.jobsetInformers.Jobset().V1alpha2().JobSets()
	c.jobsetLister = jsInformer.Lister()
	jobInformer := c.kubeInformers.Batch().V1().Jobs()
	svcInformer := c.kubeInformers.Core().V1().Services()
	c.jobLister = jobInformer.Lister()
	c.serviceLister = svcInformer.Lister()
	handlers := []struct {
		inf cache.SharedIndexInformer
		fn  func(obj interface{})
	}{
		{jsInformer.Informer(), c.enqueueJobSet},
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
	c.jobsetInformers.Start(ctx.Done())
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
