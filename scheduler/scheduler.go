package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/controller/controllerctx"
)

// Name is the scheduler name pods ask for and the events' reporting controller.
const Name = corev1.DefaultSchedulerName

// retryInterval re-tries parked pods even without a cluster event, like
// upstream's periodic flush of unschedulable pods.
const retryInterval = 60 * time.Second

var _ controllerctx.Controller = (*Scheduler)(nil)

// Scheduler assigns pending pods to nodes.
type Scheduler struct {
	client   kubernetes.Interface
	factory  informers.SharedInformerFactory
	clock    clock.Clock
	log      *slog.Logger
	metrics  *metrics
	cache    *nodeCache
	queue    *queue
	events   *rotatingRecorder
	recorder events.EventRecorder
	synced   []cache.InformerSynced
	writes   *writers
}

// New builds a scheduler on cc's pod and node informers. Run starts the
// factory.
func New(cc controllerctx.Context) (*Scheduler, error) {
	cc = cc.WithDefaults()
	m, err := newMetrics(cc.Registerer)
	if err != nil {
		return nil, err
	}
	// events.k8s.io/v1 events, as kube-scheduler records them.
	rec := newRotatingRecorder(cc.Client, cc.Clock)
	s := &Scheduler{
		client: cc.Client, factory: cc.Informers, clock: cc.Clock, log: cc.Logger.With("controller", Name), metrics: m,
		cache: newCache(), queue: newQueue(), events: rec, recorder: rec,
	}
	if err := s.watch(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Scheduler) watch() error {
	pods := factoryPods(s.factory)
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.onPod,
		UpdateFunc: func(_, obj any) { s.onPod(obj) },
		DeleteFunc: s.onPodDelete,
	}); err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	nodes := s.factory.Core().V1().Nodes().Informer()
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.onNode,
		UpdateFunc: func(_, obj any) { s.onNode(obj) },
		DeleteFunc: s.onNodeDelete,
	}); err != nil {
		return fmt.Errorf("watch nodes: %w", err)
	}
	s.synced = []cache.InformerSynced{pods.HasSynced, nodes.HasSynced}
	return nil
}

func factoryPods(f informers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Core().V1().Pods().Informer()
}

// bindingsPerWorker bounds the bindings in flight per worker. Each waits
// for a durable commit: with 4 per worker (8 in all) the bindings of a sim
// Job of 1,000 pods in flight became the queue once the node agent kept up.
const bindingsPerWorker = 16

// Run schedules pods until ctx ends. workers bounds concurrent bindings
// (times four); scheduling decisions themselves are made one at a time.
func (s *Scheduler) Run(ctx context.Context, workers int) error {
	if err := s.events.start(ctx); err != nil {
		return fmt.Errorf("start event recording: %w", err)
	}
	defer s.events.shutdown()
	s.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return fmt.Errorf("scheduler: wait for caches: %w", ctx.Err())
	}
	s.writes = newWriters(max(workers, 1) * bindingsPerWorker)
	go s.flushPeriodically(ctx)
	go func() { <-ctx.Done(); s.queue.close() }()
	s.log.Info("scheduler started")
	for {
		pod, ok := s.queue.pop()
		if !ok {
			break
		}
		s.scheduleOne(ctx, pod)
	}
	s.writes.stop()
	return nil
}

func (s *Scheduler) flushPeriodically(ctx context.Context) {
	for s.wait(ctx, retryInterval) {
		s.queue.moveAll()
	}
}

// wait sleeps d on the injected clock; false when ctx ended first.
func (s *Scheduler) wait(ctx context.Context, d time.Duration) bool {
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
