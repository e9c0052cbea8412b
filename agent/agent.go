package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"

	"github.com/batchlet/batchlet/runtime"
	wq "github.com/batchlet/batchlet/workqueue"
)

// Agent is a node agent. Create it with New and start it with Run.
type Agent struct {
	cfg      Config
	log      *slog.Logger
	recorder record.EventRecorder
	events   record.EventBroadcaster
	queue    workqueue.TypedRateLimitingInterface[string]

	factory  informers.SharedInformerFactory
	podsInf  cache.SharedIndexInformer
	pods     corelisters.PodLister
	listener net.Listener
	nodeUID  types.UID
	// ownIPs: the agent allocates pod IPs itself (Config.PodIPs was nil)
	// and takes them from its node's pod CIDR.
	ownIPs bool
	peers  *peers
	queues *wq.Manager
	// apiEndpoint is where pods reach the API (KUBERNETES_SERVICE_*).
	apiEndpoint *apiEndpoint
	// started: the start events are recorded (once per process).
	started bool

	mu           sync.Mutex
	states       map[string]*podState // by namespace/name
	byUID        map[types.UID]string
	subdomains   map[string]map[types.UID]*podState // by namespace/subdomain
	shuttingDown bool
}

// eventSource marks events as the kubelet's.
const eventComponent = "kubelet"

// New validates cfg and prepares an Agent; it opens the endpoints' listener
// so Port() is known before Run.
func New(cfg Config) (*Agent, error) {
	ownIPs := cfg.PodIPs == nil
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeName), states: map[string]*podState{}, byUID: map[types.UID]string{},
		subdomains: map[string]map[types.UID]*podState{}, ownIPs: ownIPs}
	a.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 10*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "agent-pods", Clock: cfg.Clock})
	a.events = record.NewBroadcaster(record.WithContext(context.Background()))
	a.recorder = a.events.NewRecorder(eventScheme(), corev1.EventSource{Component: eventComponent, Host: cfg.NodeName})
	if cfg.EventQPS > 0 {
		a.recorder = &throttledRecorder{EventRecorder: a.recorder, log: a.log,
			limit: flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(cfg.EventQPS, cfg.EventBurst, cfg.Clock)}
	}
	if s, ok := cfg.Runtime.(interface{ SetEventRecorder(runtime.EventRecorder) }); ok {
		s.SetEventRecorder(a.containerEvent)
	}
	onThisNode := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
	}
	if cfg.NewInformerFactory != nil {
		f, err := cfg.NewInformerFactory(onThisNode)
		if err != nil {
			return nil, fmt.Errorf("pod informers: %w", err)
		}
		a.factory = f
	} else {
		a.factory = informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informers.WithTweakListOptions(onThisNode))
	}
	a.peers = newPeers(a)
	a.apiEndpoint = newAPIEndpoint(cfg.Client)
	a.queues = a.newWorkQueues()
	a.podsInf = a.factory.Core().V1().Pods().Informer()
	a.pods = a.factory.Core().V1().Pods().Lister()
	if cfg.Port >= 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.ListenAddress, strconv.Itoa(cfg.Port)))
		if err != nil {
			return nil, fmt.Errorf("listen for kubelet endpoints: %w", err)
		}
		a.listener = ln
	}
	return a, nil
}

// Port is the port of the logs/exec endpoints (0 when not serving).
func (a *Agent) Port() int {
	if a.listener == nil {
		return 0
	}
	return a.listener.Addr().(*net.TCPAddr).Port
}

// Run registers the node, serves the endpoints and runs pods until ctx
// ends; then it terminates the running pods (bounded by
// ShutdownGracePeriod) and returns.
func (a *Agent) Run(ctx context.Context) error {
	defer a.queue.ShutDown()
	a.events.StartRecordingToSink(&eventSink{client: a.cfg.Client})
	defer a.events.Shutdown()
	if err := a.registerNode(ctx); err != nil {
		return err
	}
	a.cfg.Runtime.Subscribe(a.runtimeChanged)
	if _, err := a.podsInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    a.enqueuePod,
		UpdateFunc: func(_, n any) { a.enqueuePod(n) },
		DeleteFunc: a.enqueuePod,
	}); err != nil {
		return fmt.Errorf("add pod handler: %w", err)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	a.factory.Start(runCtx.Done())
	a.apiEndpoint.run(runCtx.Done())
	if !waitForSync(ctx, a.podsInf.HasSynced) {
		return fmt.Errorf("pod informer did not sync: %w", ctx.Err())
	}
	a.reapOrphans()
	var wg sync.WaitGroup
	for range a.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a.processNext(runCtx) {
			}
		}()
	}
	wg.Add(3)
	go func() { defer wg.Done(); _ = a.runPeers(runCtx) }()
	go func() { defer wg.Done(); a.renewLease(ctx) }()
	go func() { defer wg.Done(); a.heartbeat(ctx) }()
	srvErr := make(chan error, 1)
	if a.listener != nil {
		srv := a.server()
		go func() { srvErr <- srv.ServeTLS(a.listener, "", "") }()
		defer srv.Close()
	}
	a.log.Info("node agent running", "port", a.Port())
	select {
	case <-ctx.Done():
	case err := <-srvErr:
		a.log.Error("kubelet endpoints stopped", "err", err)
	}
	a.shutdown(runCtx)
	a.queues.Close()
	stop()
	a.queue.ShutDown()
	wg.Wait()
	return nil
}

func (a *Agent) enqueuePod(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	a.queue.Add(key)
}

func (a *Agent) runtimeChanged(uid types.UID) {
	a.mu.Lock()
	key, ok := a.byUID[uid]
	a.mu.Unlock()
	if ok {
		a.queue.Add(key)
	}
}

func (a *Agent) processNext(ctx context.Context) bool {
	key, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(key)
	if err := a.syncPod(ctx, key); err != nil {
		a.log.Info("sync pod failed, will retry", "pod", key, "err", err.Error())
		a.queue.AddRateLimited(key)
		return true
	}
	a.queue.Forget(key)
	return true
}

// waitForSync polls hasSynced every millisecond. client-go's
// WaitForCacheSync polls every 100 ms, which would sit on the critical path
// of every `batchlet run`.
func waitForSync(ctx context.Context, hasSynced cache.InformerSynced) bool {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !hasSynced() {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// reapOrphans has the runtime end the containers an earlier agent process
// left of pods deleted, or finished, while no agent ran (the kubelet's
// garbage collection of containers without a pod).
func (a *Agent) reapOrphans() {
	ad, ok := a.cfg.Runtime.(runtime.Adopter)
	if !ok {
		return
	}
	pods, err := a.pods.List(labels.Everything())
	if err != nil {
		a.log.Info("list pods to reap orphaned containers", "err", err.Error())
		return
	}
	live := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		live[p.UID] = p.Spec.NodeName == a.cfg.NodeName && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
	}
	ad.ReapOrphans(live)
}
