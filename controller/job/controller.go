package job

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	batch "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/controller/controllerctx"
	"github.com/batchlet/batchlet/controller/internal/ownwrites"
)

// Options tune the Job controller. Zero values take upstream's defaults.
type Options struct {
	// SyncBatchPeriod batches syncs triggered by pod changes (default 1s).
	SyncBatchPeriod time.Duration
	// PodFailureBackOff / MaxPodFailureBackOff: the exponential delay before
	// replacing failed pods (defaults 10s / 10m, upstream's). A Job's
	// PodFailureBackoffAnnotation overrides them.
	PodFailureBackOff    time.Duration
	MaxPodFailureBackOff time.Duration
	// MaxUncountedPods and MaxPodCreateDeletePerSync (defaults 500).
	MaxUncountedPods          int
	MaxPodCreateDeletePerSync int
	// Mode says which Jobs, by spec.managedBy, the controller acts on
	// (default ModeReplace).
	Mode Mode
}

// BatchletControllerName is the spec.managedBy value of Jobs batchlet's Job
// controller manages beside kube-controller-manager's, which leaves Jobs
// with a managedBy other than its own to their controller (upstream's
// JobManagedBy, on by default since 1.32).
const BatchletControllerName = "batchlet.dev/job-controller"

// Mode selects the Jobs the controller manages.
type Mode string

const (
	// ModeReplace: Jobs without spec.managedBy, with upstream's value
	// kubernetes.io/job-controller or with batchlet's: the controller takes
	// kube-controller-manager's place (batchlet server, or a cluster whose
	// kube-controller-manager runs without its Job controller).
	ModeReplace Mode = "replace"
	// ModeAlongside: only Jobs whose spec.managedBy is
	// batchlet.dev/job-controller, beside kube-controller-manager's Job
	// controller, which manages the others.
	ModeAlongside Mode = "alongside"
)

// ParseMode reads a --job-controller-mode value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeReplace, ModeAlongside:
		return m, nil
	}
	return "", fmt.Errorf("job controller mode %q: want %q or %q", s, ModeReplace, ModeAlongside)
}

// manages says whether a Job with spec.managedBy name ("" when unset) is
// the controller's in mode m.
func (m Mode) manages(name string) bool {
	switch name {
	case BatchletControllerName:
		return true
	case "", batch.JobControllerName:
		return m != ModeAlongside
	}
	return false
}

var _ controllerctx.Controller = (*Controller)(nil)

// Controller is the batch/v1 Job controller.
type Controller struct {
	client      kubernetes.Interface
	jobLister   batchlisters.JobLister
	podLister   corelisters.PodLister
	podIndexer  cache.Indexer
	jobsSynced  cache.InformerSynced
	podsSynced  cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	orphanQueue workqueue.TypedRateLimitingInterface[string]

	clock       clock.WithTicker
	log         *slog.Logger
	metrics     *metrics
	recorder    record.EventRecorder
	broadcaster record.EventBroadcaster
	batchPeriod time.Duration
	tun         tunables
	mode        Mode // which Jobs it acts on, by spec.managedBy

	podExpect      *podExpectations
	finalizerExp   *finalizerExpectations
	backoff        *backoffStore
	finishedJobsMu sync.Mutex
	finishedJobs   map[types.UID]bool // terminal status written, update not yet seen
	ownWrites      *ownwrites.Tracker // status updates the cache has not shown yet
	settledMu      sync.Mutex
	settledScanned map[types.UID]bool // Jobs whose settled pods need no new look
	calls          *callPool          // runs a sync's per-pod API calls
}

const podByJobIndex = "job-controller-uid"

// New builds the Job controller over cc's pod and Job informers. It
// registers its event handlers and pod indexer, so call it before the
// informer factory starts.
func New(cc controllerctx.Context, opts Options) (*Controller, error) {
	cc = cc.WithDefaults()
	opts = withDefaults(opts)
	if err := ValidatePodFailureBackoff(opts.PodFailureBackOff, opts.MaxPodFailureBackOff); err != nil {
		return nil, fmt.Errorf("job controller: %w", err)
	}
	m, err := newMetrics(cc.Registerer)
	if err != nil {
		return nil, fmt.Errorf("register job controller metrics: %w", err)
	}
	podInformer, jobInformer := cc.Informers.Core().V1().Pods(), cc.Informers.Batch().V1().Jobs()
	c := &Controller{
		client:         cc.Client,
		jobLister:      jobInformer.Lister(),
		podLister:      podInformer.Lister(),
		podIndexer:     podInformer.Informer().GetIndexer(),
		jobsSynced:     jobInformer.Informer().HasSynced,
		podsSynced:     podInformer.Informer().HasSynced,
		clock:          cc.Clock,
		log:            cc.Logger,
		metrics:        m,
		batchPeriod:    opts.SyncBatchPeriod,
		mode:           opts.Mode,
		podExpect:      newPodExpectations(cc.Clock, ExpectationsTimeout),
		finalizerExp:   newFinalizerExpectations(),
		backoff:        newBackoffStore(),
		finishedJobs:   map[types.UID]bool{},
		ownWrites:      ownwrites.New(),
		settledScanned: map[types.UID]bool{},
		calls:          newCallPool(defaultMaxIdleCallers),
		tun: tunables{
			podFailureBackOff:    opts.PodFailureBackOff,
			maxPodFailureBackOff: opts.MaxPodFailureBackOff,
			maxUncountedPods:     opts.MaxUncountedPods,
			maxCreateDelete:      opts.MaxPodCreateDeletePerSync,
		},
	}
	c.queue = newQueue(cc.Clock, "job")
	c.orphanQueue = newQueue(cc.Clock, "job_orphan_pod")
	c.recorder, c.broadcaster = cc.EventRecorder(scheme.Scheme, controllerComponent)
	if err := c.addPodIndexer(podInformer.Informer()); err != nil {
		return nil, err
	}
	if err := c.registerHandlers(podInformer.Informer(), jobInformer.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

func withDefaults(o Options) Options {
	if o.SyncBatchPeriod == 0 {
		o.SyncBatchPeriod = DefaultSyncJobBatchPeriod
	}
	def := defaultTunables()
	if o.PodFailureBackOff == 0 {
		o.PodFailureBackOff = def.podFailureBackOff
	}
	if o.MaxPodFailureBackOff == 0 {
		o.MaxPodFailureBackOff = def.maxPodFailureBackOff
	}
	if o.MaxUncountedPods == 0 {
		o.MaxUncountedPods = def.maxUncountedPods
	}
	if o.MaxPodCreateDeletePerSync == 0 {
		o.MaxPodCreateDeletePerSync = def.maxCreateDelete
	}
	return o
}

func newQueue(c clock.WithTicker, name string) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](DefaultJobAPIBackOff, MaxJobAPIBackOff),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: c},
	)
}

// Run starts the event broadcaster, waits for the caches and runs workers
// sync workers and as many orphan-pod workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	defer c.orphanQueue.ShutDown()
	if c.broadcaster != nil {
		c.broadcaster.StartStructuredLogging(3)
	}
	defer controllerctx.StartEvents(c.broadcaster, c.client)()
	c.log.Info("starting job controller", "workers", workers)
	if !cache.WaitForNamedCacheSync("job", ctx.Done(), c.podsSynced, c.jobsSynced) {
		return fmt.Errorf("job controller: caches did not sync")
	}
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(2)
		go func() { defer wg.Done(); c.runWorker(ctx, c.queue, c.syncJob) }()
		go func() { defer wg.Done(); c.runWorker(ctx, c.orphanQueue, c.syncOrphanPod) }()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	c.orphanQueue.ShutDown()
	wg.Wait()
	c.calls.stop()
	c.log.Info("stopped job controller")
	return nil
}

func (c *Controller) runWorker(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) {
	for c.processNext(ctx, q, sync) {
	}
}

func (c *Controller) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	if err := sync(ctx, key); err != nil {
		c.log.Info("sync failed, requeueing", "key", key, "err", err)
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}

// SyncJob runs one sync of the Job with the given key; exported for tests
// and tools that drive the controller without workers.
func (c *Controller) SyncJob(ctx context.Context, key string) error { return c.syncJob(ctx, key) }
