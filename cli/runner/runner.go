package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
)

// Exit codes of `batchlet run`.
const (
	ExitComplete    = 0
	ExitFailed      = 1
	ExitInvalid     = 2
	ExitInterrupted = 130
)

// Options configures one run.
type Options struct {
	Config    *rest.Config
	Namespace string
	// Source names the manifest in messages ("pi.yaml", "STDIN").
	Source string
	// Stdout receives pod logs; Stderr progress and the summary.
	Stdout, Stderr io.Writer
	Quiet          bool
	// Terminal draws a live progress line instead of plain lines.
	Terminal bool
	// Remove deletes what the run created, pods included, once it ends,
	// and waits until it is gone, so the manifest can run again at once
	// (run against a server without --keep). Without it the objects stay,
	// unless the run is interrupted.
	Remove bool
	Now    func() time.Time
}

// Result is what a run ended with.
type Result struct {
	Items    []ItemResult  `json:"items"`
	ExitCode int           `json:"exitCode"`
	Elapsed  time.Duration `json:"elapsedNanos"`
}

// Run submits objs and follows every Job and JobSet among them until each
// has finished, ctx ends (then it deletes what it created and reports
// ExitInterrupted), or the API refuses the input (ExitInvalid).
func Run(ctx context.Context, opts Options, objs []*unstructured.Unstructured) (*Result, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	start := opts.Now()
	clients, err := newClients(opts.Config)
	if err != nil {
		return nil, err
	}
	created, err := submit(ctx, clients.dyn, clients.mapper, objs, opts.Namespace, opts.Source)
	if err != nil && ctx.Err() != nil {
		return &Result{ExitCode: ExitInterrupted}, nil // interrupted while submitting; submit cleaned up
	}
	if err != nil {
		var inErr *InputError
		if errors.As(err, &inErr) {
			fmt.Fprintln(opts.Stderr, inErr.Error())
			return &Result{ExitCode: ExitInvalid}, nil
		}
		return nil, err
	}
	for _, c := range created {
		fmt.Fprintf(opts.Stderr, "%s/%s created\n", kindResource(c), c.obj.GetName())
	}
	f := newFollower(opts, clients, created)
	items, interrupted := f.follow(ctx)
	res := &Result{Items: items, Elapsed: opts.Now().Sub(start)}
	switch {
	case interrupted:
		res.ExitCode = ExitInterrupted
	case anyFailed(items):
		res.ExitCode = ExitFailed
	default:
		res.ExitCode = ExitComplete
	}
	if interrupted || opts.Remove {
		// The run's context may have ended (Ctrl-C, --timeout): the
		// deletion still has to go out.
		left := cleanup(context.WithoutCancel(ctx), clients.dyn, created, opts.Remove)
		for _, l := range left {
			fmt.Fprintf(opts.Stderr, "warning: %s is still being deleted\n", l)
		}
	}
	return res, nil
}

func anyFailed(items []ItemResult) bool {
	for _, it := range items {
		if it.Outcome != OutcomeComplete {
			return true
		}
	}
	return false
}

// kindResource names an object's type as kubectl's messages do: the
// lower-case kind, qualified by the group ("job.batch", "configmap").
func kindResource(s submitted) string {
	gvk := s.obj.GroupVersionKind()
	if gvk.Group == "" {
		return strings.ToLower(gvk.Kind)
	}
	return strings.ToLower(gvk.Kind) + "." + gvk.Group
}

type clients struct {
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newClients(cfg *rest.Config) (*clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("build client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("build dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("build discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	return &clients{kube: kube, dyn: dyn, mapper: mapper}, nil
}

// follower watches the submitted Jobs/JobSets and their pods.
type follower struct {
	opts     Options
	clients  *clients
	followed []submitted
	logs     *logStreamer
	progress *progress

	mu      sync.Mutex
	results map[string]ItemResult // by kind/ns/name
	changed chan struct{}
}

func newFollower(opts Options, c *clients, created []submitted) *follower {
	var followed []submitted
	for _, s := range created {
		if gvk := s.obj.GroupVersionKind(); gvk == JobGVK || gvk == JobSetGVK || gvk == PodGVK {
			followed = append(followed, s)
		}
	}
	multi := len(followed) > 1
	for _, s := range followed {
		if s.obj.GroupVersionKind() == JobSetGVK || mayRunManyPods(s.obj) {
			multi = true
		}
	}
	return &follower{
		opts:     opts,
		clients:  c,
		followed: followed,
		logs:     newLogStreamer(c.kube, opts.Stdout, multi, opts.Quiet),
		progress: newProgress(opts.Stderr, opts.Terminal, opts.Now),
		results:  map[string]ItemResult{},
		changed:  make(chan struct{}, 1),
	}
}

func mayRunManyPods(job *unstructured.Unstructured) bool {
	return nestedNum(job, "spec", "completions") > 1 || nestedNum(job, "spec", "parallelism") > 1
}

func key(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func (f *follower) notify() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// follow blocks until every followed object finished or ctx ended.
func (f *follower) follow(ctx context.Context) ([]ItemResult, bool) {
	if len(f.followed) == 0 {
		return nil, false
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	namespaces := map[string]bool{}
	for _, s := range f.followed {
		namespaces[s.obj.GetNamespace()] = true
	}
	for ns := range namespaces {
		f.watchNamespace(ctx, ns)
	}
	for {
		select {
		case <-ctx.Done():
			f.progress.clear()
			return f.snapshot(), true
		case <-f.changed:
		}
		items := f.snapshot()
		if f.allSeen() {
			f.progress.draw(items)
		}
		if allFinished(items) {
			f.progress.clear()
			f.finish(ctx, items)
			return items, false
		}
	}
}

func allFinished(items []ItemResult) bool {
	for _, it := range items {
		if it.Outcome == OutcomeRunning {
			return false
		}
	}
	return true
}

func (f *follower) snapshot() []ItemResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]ItemResult, 0, len(f.followed))
	for _, s := range f.followed {
		k := key(s.obj.GetKind(), s.obj.GetNamespace(), s.obj.GetName())
		it, ok := f.results[k]
		if !ok {
			it = ItemResult{Kind: s.obj.GetKind(), Namespace: s.obj.GetNamespace(), Name: s.obj.GetName()}
		}
		out = append(out, it)
	}
	return out
}

// allSeen reports whether every followed object has been observed once, so
// the progress line never shows placeholder counters.
func (f *follower) allSeen() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.results) == len(f.followed)
}

func (f *follower) isFollowed(obj *unstructured.Unstructured) bool {
	for _, s := range f.followed {
		if s.obj.GetUID() == obj.GetUID() {
			return true
		}
	}
	return false
}

func (f *follower) watchNamespace(ctx context.Context, ns string) {
	dynFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(f.clients.dyn, 0, ns, nil)
	for _, s := range f.followed {
		if s.obj.GetNamespace() != ns {
			continue
		}
		inf := dynFactory.ForResource(s.mapping.Resource).Informer()
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { f.onObject(o, false) },
			UpdateFunc: func(_, o any) { f.onObject(o, false) },
			DeleteFunc: func(o any) { f.onObject(o, true) },
		})
	}
	dynFactory.Start(ctx.Done())
	podFactory := informers.NewSharedInformerFactoryWithOptions(f.clients.kube, 0, informers.WithNamespace(ns))
	podInf := podFactory.Core().V1().Pods().Informer()
	_, _ = podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { f.onPod(ctx, o) },
		UpdateFunc: func(_, o any) { f.onPod(ctx, o) },
	})
	podFactory.Start(ctx.Done())
}

func (f *follower) onObject(o any, deleted bool) {
	if tomb, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = tomb.Obj
	}
	obj, ok := o.(*unstructured.Unstructured)
	if !ok || !f.isFollowed(obj) {
		return
	}
	res := evaluate(obj)
	k := key(obj.GetKind(), obj.GetNamespace(), obj.GetName())
	f.mu.Lock()
	prev, seen := f.results[k]
	if deleted && res.Outcome == OutcomeRunning {
		if seen && prev.Outcome != OutcomeRunning {
			res = prev // deleted after it finished (TTL): keep the outcome
		} else {
			res.Outcome, res.Reason, res.Message = OutcomeDeleted, "Deleted", "deleted before it finished"
		}
	}
	f.results[k] = res
	f.mu.Unlock()
	f.notify()
}

// owners of a pod among the followed objects: Jobs by the job-name label,
// JobSets by the jobset-name label.
func (f *follower) podIsOurs(pod *corev1.Pod) bool {
	for _, s := range f.followed {
		if s.obj.GetNamespace() != pod.Namespace {
			continue
		}
		var sel labels.Selector
		switch s.obj.GetKind() {
		case PodGVK.Kind:
			if s.obj.GetUID() == pod.UID {
				return true
			}
			continue
		case JobSetGVK.Kind:
			sel = labels.SelectorFromSet(labels.Set{"jobset.sigs.k8s.io/jobset-name": s.obj.GetName()})
		default:
			sel = labels.SelectorFromSet(labels.Set{"batch.kubernetes.io/job-name": s.obj.GetName()})
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			return true
		}
	}
	return false
}

func (f *follower) onPod(ctx context.Context, o any) {
	pod, ok := o.(*corev1.Pod)
	if !ok || !f.podIsOurs(pod) {
		return
	}
	f.logs.observe(ctx, pod)
	f.notify()
}

// finish ends a run whose items all finished: the Job's terminal status may
// arrive before the pod watch showed its pods, so the pods are listed once
// more and any container not yet followed gets its log stream; then the
// streams drain and the failed pods are collected.
func (f *follower) finish(ctx context.Context, items []ItemResult) {
	for _, it := range items {
		pods, err := f.pods(ctx, it)
		if err != nil {
			continue
		}
		for i := range pods {
			f.logs.observe(ctx, &pods[i])
		}
	}
	// Give log streams a moment to drain the final lines.
	f.logs.wait(5 * time.Second)
	f.collectFailedPods(ctx, items)
}

// pods lists the pods of a followed item: a bare Pod itself, the pods of a
// Job by the job-name label, of a JobSet by the jobset-name label.
func (f *follower) pods(ctx context.Context, it ItemResult) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + it.Name}
	switch it.Kind {
	case PodGVK.Kind:
		opts = metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", it.Name).String()}
	case JobSetGVK.Kind:
		opts = metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=" + it.Name}
	}
	list, err := f.clients.kube.CoreV1().Pods(it.Namespace).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// collectFailedPods records, for the summary, how the containers of failed
// pods ended, with the reason and message their status carries.
func (f *follower) collectFailedPods(ctx context.Context, items []ItemResult) {
	for i := range items {
		it := &items[i]
		if it.Outcome != OutcomeFailed {
			continue
		}
		pods, err := f.pods(ctx, *it)
		if err != nil {
			continue
		}
		for j := range pods {
			it.FailedPods = append(it.FailedPods, podExits(&pods[j])...)
		}
	}
}
