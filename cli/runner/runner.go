package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/batchlet/batchlet/results"
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
	// Reporter shows the run as it goes; nil writes plain lines, pod
	// logs to Stdout and the rest to Stderr.
	Reporter       Reporter
	Stdout, Stderr io.Writer
	Quiet          bool
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

// withDefaults fills what a caller may leave unset: the real clock, the
// default namespace and the plain line reporter.
func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Reporter == nil {
		o.Reporter = NewPlainReporter(o.Stdout, o.Stderr)
	}
	return o
}

// Run submits objs and follows every Job and JobSet among them until each
// has finished, ctx ends (then it deletes what it created and reports
// ExitInterrupted), or the API refuses the input (ExitInvalid).
func Run(ctx context.Context, opts Options, objs []*unstructured.Unstructured) (*Result, error) {
	opts = opts.withDefaults()
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
			opts.Reporter.Message(inErr.Error())
			return &Result{ExitCode: ExitInvalid}, nil
		}
		return nil, err
	}
	for _, c := range created {
		opts.Reporter.Created(kindResource(c) + "/" + c.obj.GetName())
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
			opts.Reporter.Message(fmt.Sprintf("warning: %s is still being deleted", l))
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

	mu      sync.Mutex
	results map[string]ItemResult // by kind/ns/name
	podSeen map[types.UID]PodState
	changed chan struct{}
}

func newFollower(opts Options, c *clients, created []submitted) *follower {
	if opts.Reporter == nil {
		opts.Reporter = NewPlainReporter(opts.Stdout, opts.Stderr)
	}
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
		logs:     newLogStreamer(c.kube, opts.Reporter, multi, opts.Quiet),
		results:  map[string]ItemResult{},
		podSeen:  map[types.UID]PodState{},
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
			return f.snapshot(), true
		case <-f.changed:
		}
		items := f.snapshot()
		if f.allSeen() {
			f.opts.Reporter.Update(Snapshot{Time: f.opts.Now(), Items: items, Pods: f.podStates()})
		}
		if allFinished(items) {
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
		AddFunc:    func(o any) { f.onPod(ctx, o, false) },
		UpdateFunc: func(_, o any) { f.onPod(ctx, o, false) },
		DeleteFunc: func(o any) { f.onPod(ctx, o, true) },
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

// ownerOf finds the followed object a pod belongs to, as its position in
// f.followed: Jobs by the job-name label, JobSets by the jobset-name label,
// a bare Pod by its UID; -1 when it is none of theirs.
func (f *follower) ownerOf(pod *corev1.Pod) int {
	for i, s := range f.followed {
		if s.obj.GetNamespace() != pod.Namespace {
			continue
		}
		var sel labels.Selector
		switch s.obj.GetKind() {
		case PodGVK.Kind:
			if s.obj.GetUID() == pod.UID {
				return i
			}
			continue
		case JobSetGVK.Kind:
			sel = labels.SelectorFromSet(labels.Set{jobSetNameLabel: s.obj.GetName()})
		default:
			sel = labels.SelectorFromSet(labels.Set{jobNameLabel: s.obj.GetName()})
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			return i
		}
	}
	return -1
}

// Labels that tie pods to their Job or JobSet and give their index (the
// completion index is a label as well as an annotation).
const (
	jobNameLabel         = batchv1.JobNameLabel
	jobSetNameLabel      = jobsetv1alpha2.JobSetNameKey
	completionIndexLabel = batchv1.JobCompletionIndexAnnotation
	jobGlobalIndexLabel  = jobsetv1alpha2.JobGlobalIndexKey
)

func (f *follower) onPod(ctx context.Context, o any, deleted bool) {
	if tomb, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = tomb.Obj
	}
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	owner := f.ownerOf(pod)
	if owner < 0 {
		return
	}
	st := podState(owner, pod, f.followed[owner].obj.GetKind())
	st.Deleted = deleted
	f.mu.Lock()
	f.podSeen[pod.UID] = st
	f.mu.Unlock()
	if !deleted {
		f.logs.observe(ctx, pod)
	}
	f.notify()
}

// podState reads what the view shows of a pod: its index within its
// owner, phase and container restarts.
func podState(owner int, pod *corev1.Pod, ownerKind string) PodState {
	st := PodState{Item: owner, Name: pod.Name, Index: -1, Phase: pod.Status.Phase, Created: pod.CreationTimestamp.Time}
	label := completionIndexLabel
	if ownerKind == JobSetGVK.Kind {
		label = jobGlobalIndexLabel
	}
	if v, ok := pod.Labels[label]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			st.Index = n
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		st.Restarts += cs.RestartCount
	}
	return st
}

// podStates lists the pods seen so far, by owner, index and creation.
func (f *follower) podStates() []PodState {
	f.mu.Lock()
	out := make([]PodState, 0, len(f.podSeen))
	for _, p := range f.podSeen {
		out = append(out, p)
	}
	f.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Item != b.Item {
			return a.Item < b.Item
		}
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		if !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		return a.Name < b.Name
	})
	return out
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
	opts := metav1.ListOptions{LabelSelector: jobNameLabel + "=" + it.Name}
	switch it.Kind {
	case PodGVK.Kind:
		opts = metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", it.Name).String()}
	case JobSetGVK.Kind:
		opts = metav1.ListOptions{LabelSelector: jobSetNameLabel + "=" + it.Name}
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
		f.addResults(ctx, it)
	}
}

// summaryLogLines is how many lines of a failed container's log the summary
// shows.
const summaryLogLines = 10

// addResults completes a failed item's exits from its ContainerResults:
// the last log lines of each failed container, and, when its pods are
// gone already (deleted, TTL), the failed attempts themselves. Without
// results (a cluster without the CRD) the exits stay as the pods showed.
func (f *follower) addResults(ctx context.Context, it *ItemResult) {
	field := results.FieldJobName
	switch it.Kind {
	case PodGVK.Kind:
		field = results.FieldPodName
	case JobSetGVK.Kind:
		field = results.FieldJobSetName
	}
	rs, err := results.List(ctx, f.clients.dyn, it.Namespace, field, it.Name)
	if err != nil {
		return
	}
	it.FailedPods = withResults(it.FailedPods, rs, summaryLogLines)
}

// withResults attaches to each container exit the log lines of its latest
// failed result; with no exits at all, the latest failed attempt of each
// pod's container becomes one.
func withResults(exits []PodExit, rs []*results.ContainerResult, lines int) []PodExit {
	latest := map[string]*results.ContainerResult{} // by pod/container
	var order []string
	for _, r := range rs {
		if !r.Failed() {
			continue
		}
		key := r.Spec.PodName + "/" + r.Spec.ContainerName
		prev, seen := latest[key]
		if !seen {
			order = append(order, key)
		}
		if !seen || r.Spec.Attempt > prev.Spec.Attempt {
			latest[key] = r
		}
	}
	if len(exits) == 0 {
		for _, key := range order {
			r := latest[key]
			exits = append(exits, PodExit{Pod: r.Spec.PodName, Container: r.Spec.ContainerName, ExitCode: r.Spec.ExitCode,
				Reason: r.Spec.Reason, Message: r.Spec.Message})
		}
	}
	for i := range exits {
		if r, ok := latest[exits[i].Pod+"/"+exits[i].Container]; ok && exits[i].Container != "" {
			exits[i].LastLogLines = results.LastLines(r.Spec.LogTail, lines)
		}
	}
	return exits
}
