package nodelifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/controller/controllerctx"
	"github.com/batchlet/batchlet/controller/internal/periodic"
	"github.com/batchlet/batchlet/controller/metricsreg"
)

// Upstream defaults.
const (
	DefaultGracePeriod   = 40 * time.Second
	DefaultMonitorPeriod = 5 * time.Second
	LeaseNamespace       = corev1.NamespaceNodeLease
)

// Options tunes the controller; zero values take the defaults.
type Options struct {
	// GracePeriod without a Lease renewal before a node is marked Unknown.
	GracePeriod time.Duration
	// MonitorPeriod between health and eviction passes.
	MonitorPeriod time.Duration
}

var _ controllerctx.Controller = (*Controller)(nil)

// Controller is the node lifecycle controller and NoExecute taint manager.
type Controller struct {
	client   kubernetes.Interface
	factory  informers.SharedInformerFactory
	nodes    corelisters.NodeLister
	pods     corelisters.PodLister
	synced   []cache.InformerSynced
	opts     Options
	clock    clock.Clock
	log      *slog.Logger
	recorder record.EventRecorder
	// nodeEvents records the node controller's events on nodes.
	nodeEvents record.EventRecorder
	// taintBroadcaster and nodeBroadcaster send the two recorders' events (nil
	// with an injected recorder).
	taintBroadcaster record.EventBroadcaster
	nodeBroadcaster  record.EventBroadcaster
	evicted          prometheus.Counter
	kick             chan struct{}

	mu     sync.Mutex
	probes map[string]time.Time
	// registered: nodes whose RegisteredNode event is recorded.
	registered map[string]bool
}

// New builds the controller on cc's node, lease and pod informers.
func New(cc controllerctx.Context, opts Options) (*Controller, error) {
	cc = cc.WithDefaults()
	if opts.GracePeriod == 0 {
		opts.GracePeriod = DefaultGracePeriod
	}
	if opts.MonitorPeriod == 0 {
		opts.MonitorPeriod = DefaultMonitorPeriod
	}
	factory := cc.Informers
	c := &Controller{
		client: cc.Client, factory: factory, opts: opts, clock: cc.Clock, log: cc.Logger.With("controller", "node-lifecycle"),
		nodes: factory.Core().V1().Nodes().Lister(), pods: factory.Core().V1().Pods().Lister(),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "taint_eviction_controller", Name: "pod_deletions_total",
			Help: "Total number of Pods deleted by the taint eviction controller since its start.",
		}),
		kick: make(chan struct{}, 1), probes: map[string]time.Time{}, registered: map[string]bool{},
	}
	c.recorder, c.taintBroadcaster = cc.EventRecorder(scheme.Scheme, "taint-eviction-controller")
	c.nodeEvents, c.nodeBroadcaster = cc.EventRecorder(scheme.Scheme, "node-controller")
	if err := metricsreg.Register(cc.Registerer, "node lifecycle", c.evicted); err != nil {
		return nil, err
	}
	return c, c.watch()
}

func (c *Controller) watch() error {
	leases := c.factory.Coordination().V1().Leases().Informer()
	nodes := c.factory.Core().V1().Nodes().Informer()
	pods := c.factory.Core().V1().Pods().Informer()
	_, err1 := leases.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onLease,
		UpdateFunc: func(old, cur any) { c.onLeaseUpdate(old, cur) },
	})
	_, err2 := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onNode(nil, obj) },
		UpdateFunc: c.onNode,
	})
	_, err3 := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.wake() },
		UpdateFunc: func(old, cur any) { c.onPodUpdate(old, cur) },
	})
	c.synced = []cache.InformerSynced{leases.HasSynced, nodes.HasSynced, pods.HasSynced}
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("watch nodes, leases and pods: %w", err)
	}
	return nil
}

// probe records a sign of life from a node at the current time.
func (c *Controller) probe(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.probes[node] = c.clock.Now()
}

func (c *Controller) onLease(obj any) {
	if l, ok := obj.(*coordinationv1.Lease); ok && l.Namespace == LeaseNamespace {
		c.probe(l.Name)
	}
}

func (c *Controller) onLeaseUpdate(old, cur any) {
	o, ok1 := old.(*coordinationv1.Lease)
	n, ok2 := cur.(*coordinationv1.Lease)
	if ok1 && ok2 && n.Namespace == LeaseNamespace && !equality.Semantic.DeepEqual(o.Spec.RenewTime, n.Spec.RenewTime) {
		c.probe(n.Name)
		c.wake()
	}
}

func (c *Controller) onNode(old, cur any) {
	n, ok := cur.(*corev1.Node)
	if !ok {
		return
	}
	c.mu.Lock()
	if _, seen := c.probes[n.Name]; !seen {
		c.probes[n.Name] = c.clock.Now()
	}
	registered := c.registered[n.Name]
	c.registered[n.Name] = true
	c.mu.Unlock()
	if !registered {
		c.nodeEvents.Eventf(nodeRef(n), corev1.EventTypeNormal, "RegisteredNode", "Node %s event: Registered Node %s in Controller", n.Name, n.Name)
	}
	if o, ok := old.(*corev1.Node); !ok || !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) || readyStatus(o) != readyStatus(n) {
		c.wake()
	}
}

func (c *Controller) onPodUpdate(old, cur any) {
	o, ok1 := old.(*corev1.Pod)
	n, ok2 := cur.(*corev1.Pod)
	if ok1 && ok2 && (o.Spec.NodeName != n.Spec.NodeName || !equality.Semantic.DeepEqual(o.Spec.Tolerations, n.Spec.Tolerations)) {
		c.wake()
	}
}

// wake asks for a pass now.
func (c *Controller) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Run monitors nodes until ctx ends. workers is unused: one pass at a time.
func (c *Controller) Run(ctx context.Context, _ int) error {
	defer controllerctx.StartEvents(c.taintBroadcaster, c.client)()
	defer controllerctx.StartEvents(c.nodeBroadcaster, c.client)()
	c.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("node lifecycle: wait for caches: %w", ctx.Err())
	}
	periodic.Run(ctx, c.clock, c.opts.MonitorPeriod, c.kick, c.Pass, func(err error) {
		c.log.Info("node lifecycle pass failed", "err", err)
	})
	return nil
}

// Pass checks every node's heartbeat and taints, then evicts pods.
func (c *Controller) Pass(ctx context.Context) error {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var errs []error
	for _, n := range nodes {
		errs = append(errs, c.monitorNode(ctx, n))
	}
	errs = append(errs, c.evictPass(ctx))
	return errors.Join(errs...)
}

// monitorNode marks a silent node Unknown and keeps its taints in line with
// its Ready condition.
func (c *Controller) monitorNode(ctx context.Context, node *corev1.Node) error {
	c.mu.Lock()
	last, ok := c.probes[node.Name]
	if !ok {
		last = c.clock.Now()
		c.probes[node.Name] = last
	}
	c.mu.Unlock()
	now := metav1.NewTime(c.clock.Now())
	var markErr error
	if heartbeatLost(last, now.Time, c.opts.GracePeriod) {
		if conds, changed := unknownConditions(node, now); changed {
			c.log.Info("node stopped posting status", "node", node.Name)
			if err := c.patchConditions(ctx, node.Name, conds); err != nil {
				return err
			}
			if readyStatus(node) == corev1.ConditionTrue {
				c.nodeEvents.Eventf(nodeRef(node), corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: %s", node.Name, "NodeNotReady")
				markErr = c.markPodsNotReady(ctx, node.Name, now)
			}
			node = node.DeepCopy()
			node.Status.Conditions = mergeConditions(node.Status.Conditions, conds)
		}
	}
	return errors.Join(markErr, c.syncTaints(ctx, node, now))
}

// nodeRef refers to a node in the node controller's events.
func nodeRef(n *corev1.Node) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}
}

func mergeConditions(have, set []corev1.NodeCondition) []corev1.NodeCondition {
	out := append([]corev1.NodeCondition(nil), have...)
	for _, s := range set {
		replaced := false
		for i := range out {
			if out[i].Type == s.Type {
				out[i], replaced = s, true
			}
		}
		if !replaced {
			out = append(out, s)
		}
	}
	return out
}

func (c *Controller) patchConditions(ctx context.Context, name string, conds []corev1.NodeCondition) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		return fmt.Errorf("encode node status patch: %w", err)
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark node %s unknown: %w", name, err)
	}
	return nil
}

// syncTaints updates spec.taints when the readiness taints are out of date.
func (c *Controller) syncTaints(ctx context.Context, node *corev1.Node, now metav1.Time) error {
	want := desiredTaints(node, now)
	if equality.Semantic.DeepEqual(want, node.Spec.Taints) || (len(want) == 0 && len(node.Spec.Taints) == 0) {
		return nil
	}
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := c.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Conditions = mergeConditions(cur.Status.Conditions, node.Status.Conditions)
		taints := desiredTaints(cur, now)
		if equality.Semantic.DeepEqual(taints, cur.Spec.Taints) {
			return nil
		}
		cur.Spec.Taints = taints
		_, err = c.client.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update taints of node %s: %w", node.Name, err)
	}
	return nil
}
