package rootca

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/batchlet/batchlet/controller/controllerctx"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Controller publishes the root CA ConfigMap into every namespace.
type Controller struct {
	client     kubernetes.Interface
	rootCA     string
	log        *slog.Logger
	namespaces corelisters.NamespaceLister
	configMaps corelisters.ConfigMapLister
	cmFactory  informers.SharedInformerFactory
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
}

// New builds the publisher of cc.RootCA (PEM) on cc's namespace informer;
// it watches only the ConfigMaps named kube-root-ca.crt, with its own
// informer, started by Run. With no CA (a kubeconfig that skips TLS
// verification) Run publishes nothing.
func New(cc controllerctx.Context) (*Controller, error) {
	cc = cc.WithDefaults()
	client, nsInformer, rootCA, log := cc.Client, cc.Informers.Core().V1().Namespaces(), cc.RootCA, cc.Logger
	cmFactory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ConfigMapName).String()
	}))
	cmInformer := cmFactory.Core().V1().ConfigMaps()
	c := &Controller{
		client: client, rootCA: string(rootCA), log: log.With("controller", "root-ca-cert-publisher"),
		namespaces: nsInformer.Lister(), configMaps: cmInformer.Lister(), cmFactory: cmFactory,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "root_ca_cert_publisher"}),
	}
	enqueueNamespace := func(obj interface{}) {
		if ns, ok := obj.(*corev1.Namespace); ok {
			c.queue.Add(ns.Name)
		}
	}
	if _, err := nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueNamespace,
		UpdateFunc: func(_, obj interface{}) { enqueueNamespace(obj) },
	}); err != nil {
		return nil, fmt.Errorf("root CA publisher: watch namespaces: %w", err)
	}
	// An edited or deleted ConfigMap is put back.
	if _, err := cmInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) { c.enqueueConfigMap(obj) },
		DeleteFunc: c.enqueueConfigMap,
	}); err != nil {
		return nil, fmt.Errorf("root CA publisher: watch configmaps: %w", err)
	}
	c.synced = []cache.InformerSynced{nsInformer.Informer().HasSynced, cmInformer.Informer().HasSynced}
	return c, nil
}

func (c *Controller) enqueueConfigMap(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == ConfigMapName {
		c.queue.Add(cm.Namespace)
	}
}

// Run syncs namespaces with workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if c.rootCA == "" {
		c.log.Warn("no CA bundle for the API (TLS verification skipped?): not publishing " + ConfigMapName)
		return nil
	}
	c.cmFactory.Start(ctx.Done())
	defer c.cmFactory.Shutdown()
	// Its own ConfigMap informer starts here: poll it every millisecond
	// rather than client-go's 100 ms, since pods of a fresh server (batchlet
	// run) wait for the first ConfigMap to mount their token volume.
	synced := func(context.Context) (bool, error) {
		for _, ok := range c.synced {
			if !ok() {
				return false, nil
			}
		}
		return true, nil
	}
	if err := wait.PollUntilContextCancel(ctx, time.Millisecond, true, synced); err != nil {
		return fmt.Errorf("root CA publisher: waiting for caches: %w", err)
	}
	for range workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	ns, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(ns)
	if err := c.sync(ctx, ns); err != nil {
		c.log.Info("syncing root CA configmap failed, retrying", "namespace", ns, "name", ConfigMapName, "err", err)
		c.queue.AddRateLimited(ns)
		return true
	}
	c.queue.Forget(ns)
	return true
}

// sync makes one namespace's ConfigMap what decide says.
func (c *Controller) sync(ctx context.Context, name string) error {
	ns, err := c.namespaces.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting namespace: %w", err)
	}
	cm, err := c.configMaps.ConfigMaps(name).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		cm, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("getting configmap: %w", err)
	}
	act, want := decide(ns, cm, c.rootCA)
	switch act {
	case actionCreate:
		_, err = c.client.CoreV1().ConfigMaps(name).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) || isTerminating(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("creating configmap: %w", err)
		}
		c.log.Debug("published root CA", "namespace", name, "name", ConfigMapName)
	case actionUpdate:
		if _, err = c.client.CoreV1().ConfigMaps(name).Update(ctx, want, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating configmap: %w", err)
		}
		c.log.Debug("restored root CA", "namespace", name, "name", ConfigMapName)
	}
	return nil
}

// isTerminating: the namespace began terminating after the lister saw it
// (the API forbids new content in it).
func isTerminating(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) || apierrors.IsForbidden(err)
}
