package podgc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/controller/controllerctx"
	"github.com/batchlet/batchlet/controller/internal/periodic"
	"github.com/batchlet/batchlet/controller/metricsreg"
)

// Upstream defaults.
const (
	DefaultTerminatedPodThreshold = 12500
	DefaultPeriod                 = 20 * time.Second
	DefaultQuarantine             = 40 * time.Second
	// deleteWorkers: concurrent deletes of terminated pods in one pass.
	deleteWorkers = 50
)

// Condition the pod GC puts on orphaned pods.
const (
	ReasonDeletionByPodGC = "DeletionByPodGC"
	messageNodeGone       = "PodGC: node no longer exists"
)

// Options tunes the collector; zero values take the upstream defaults.
type Options struct {
	// TerminatedPodThreshold: terminated pods kept before the oldest are deleted.
	TerminatedPodThreshold int
	// Period between passes.
	Period time.Duration
	// Quarantine: how long a node must be missing before its pods are collected.
	Quarantine time.Duration
	// Policy is PolicyThreshold (the default) or PolicyCounted.
	Policy string
}

func (o Options) withDefaults() Options {
	if o.TerminatedPodThreshold == 0 {
		o.TerminatedPodThreshold = DefaultTerminatedPodThreshold
	}
	if o.Period == 0 {
		o.Period = DefaultPeriod
	}
	if o.Quarantine == 0 {
		o.Quarantine = DefaultQuarantine
	}
	if o.Policy == "" {
		o.Policy = PolicyThreshold
	}
	return o
}

// ValidPolicy reports whether policy names a terminated-pod policy.
func ValidPolicy(policy string) error {
	if policy != PolicyThreshold && policy != PolicyCounted {
		return fmt.Errorf("terminated pod gc policy %q: want %s or %s", policy, PolicyThreshold, PolicyCounted)
	}
	return nil
}

var _ controllerctx.Controller = (*Controller)(nil)

// Controller is the pod garbage collector.
type Controller struct {
	client       kubernetes.Interface
	factory      informers.SharedInformerFactory
	pods         corelisters.PodLister
	nodes        corelisters.NodeLister
	synced       []cache.InformerSynced
	opts         Options
	clock        clock.WithTicker
	log          *slog.Logger
	deleted      *prometheus.CounterVec
	missingSince map[string]time.Time
	// counted collects counted pods under PolicyCounted; nil otherwise.
	counted *countedCollector
}

// New builds the pod GC on cc's pod and node informers.
func New(cc controllerctx.Context, opts Options) (*Controller, error) {
	cc = cc.WithDefaults()
	factory := cc.Informers
	c := &Controller{
		client: cc.Client, factory: factory, opts: opts.withDefaults(), clock: cc.Clock,
		log: cc.Logger.With("controller", "pod-garbage-collector"), missingSince: map[string]time.Time{},
		pods:  factory.Core().V1().Pods().Lister(),
		nodes: factory.Core().V1().Nodes().Lister(),
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "pod_gc_collector", Name: "force_delete_pods_total",
			Help: "Number of pods that are being forcefully deleted by the pod GC, by reason.",
		}, []string{"reason"}),
	}
	if err := ValidPolicy(c.opts.Policy); err != nil {
		return nil, err
	}
	c.synced = []cache.InformerSynced{factory.Core().V1().Pods().Informer().HasSynced, factory.Core().V1().Nodes().Informer().HasSynced}
	if c.opts.Policy == PolicyCounted {
		jobs := factory.Batch().V1().Jobs()
		c.counted = newCountedCollector(c, jobs.Lister())
		if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(c.counted.handlers()); err != nil {
			return nil, fmt.Errorf("pod gc: watch pods: %w", err)
		}
		c.synced = append(c.synced, jobs.Informer().HasSynced)
	}
	if err := metricsreg.Register(cc.Registerer, "pod gc", c.deleted); err != nil {
		return nil, err
	}
	return c, nil
}

// Run collects every period until ctx ends. workers is unused: one pass at a time.
func (c *Controller) Run(ctx context.Context, _ int) error {
	c.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("pod gc: wait for caches: %w", ctx.Err())
	}
	if c.counted != nil {
		go c.counted.run(ctx)
	}
	periodic.Run(ctx, c.clock, c.opts.Period, nil, c.Pass, func(err error) {
		c.log.Info("pod gc pass failed", "err", err)
	})
	return nil
}

// Pass runs one collection over the informer caches.
func (c *Controller) Pass(ctx context.Context) error {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	nodeList, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	nodes := make(map[string]bool, len(nodeList))
	for _, n := range nodeList {
		nodes[n.Name] = true
	}
	if c.counted != nil {
		c.counted.sweepPods(pods)
	}
	p := decide(observed{pods: pods, nodes: nodes, threshold: c.opts.TerminatedPodThreshold,
		missingSince: c.missingSince, quarantine: c.opts.Quarantine, now: c.clock.Now()})
	return c.apply(ctx, p)
}

func (c *Controller) apply(ctx context.Context, p plan) error {
	// As upstream: terminated pods are deleted by deleteWorkers at a time,
	// since each delete waits for a durable write.
	errs := make([]error, len(p.terminated))
	workqueue.ParallelizeUntil(ctx, deleteWorkers, len(p.terminated), func(i int) {
		errs[i] = c.deletePod(ctx, p.terminated[i], "terminated")
	})
	for _, pod := range p.orphaned {
		if !c.nodeReallyGone(ctx, pod.Spec.NodeName) {
			continue
		}
		cond := &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: ReasonDeletionByPodGC, Message: messageNodeGone}
		errs = append(errs, c.failAndDelete(ctx, pod, cond, "orphaned"))
	}
	for _, pod := range p.unscheduledTerminating {
		errs = append(errs, c.failAndDelete(ctx, pod, nil, "unscheduled"))
	}
	return errors.Join(errs...)
}

// nodeReallyGone double-checks with the API before collecting orphans.
func (c *Controller) nodeReallyGone(ctx context.Context, name string) bool {
	_, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// failAndDelete marks a non-terminal pod Failed (with cond, when given),
// then deletes it at once.
func (c *Controller) failAndDelete(ctx context.Context, pod *corev1.Pod, cond *corev1.PodCondition, reason string) error {
	if !isTerminated(pod) {
		if err := c.markFailed(ctx, pod, cond); err != nil {
			return err
		}
	}
	return c.deletePod(ctx, pod, reason)
}

func (c *Controller) markFailed(ctx context.Context, pod *corev1.Pod, cond *corev1.PodCondition) error {
	status := map[string]any{"phase": corev1.PodFailed}
	if cond != nil {
		cond.LastTransitionTime = metav1.NewTime(c.clock.Now())
		status["conditions"] = []corev1.PodCondition{*cond}
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return fmt.Errorf("encode status patch: %w", err)
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark pod %s/%s failed: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func (c *Controller) deletePod(ctx context.Context, pod *corev1.Pod, reason string) error {
	c.log.Info("pod gc deleting pod", "namespace", pod.Namespace, "name", pod.Name, "reason", reason)
	uid := pod.UID
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.deleted.WithLabelValues(reason).Inc()
	return nil
}
