package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/batchlet/batchlet/runtime"
)

// Pods on other nodes that share a subdomain with pods here belong in
// their /etc/hosts too, as cluster DNS would answer for them. Watching
// every pod of the cluster costs, so the watch starts only once a second
// Node exists: a one-node control plane pays nothing for it.

const (
	subdomainIndex = "subdomain"
	// peerRefreshDelay gathers the changes of many peers into one rewrite of
	// the hosts files of a subdomain.
	peerRefreshDelay = 100 * time.Millisecond
)

// peers watches nodes, then (with two nodes or more) the pods of the
// cluster.
type peers struct {
	factory informers.SharedInformerFactory
	queue   workqueue.TypedDelayingInterface[string] // namespace/subdomain to refresh

	mu   sync.Mutex
	pods cache.SharedIndexInformer // nil until a second node appears
}

func newPeers(a *Agent) *peers {
	return &peers{
		factory: informers.NewSharedInformerFactory(a.cfg.Client, 0),
		queue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
			Name: "agent-peer-hosts", Clock: a.cfg.Clock}),
	}
}

// runPeers watches nodes and refreshes hosts files until ctx ends.
func (a *Agent) runPeers(ctx context.Context) error {
	p := a.peers
	if _, err := p.factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok && n.Name != a.cfg.NodeName {
				a.watchPeerPods(ctx)
			}
		},
	}); err != nil {
		return fmt.Errorf("add node handler: %w", err)
	}
	p.factory.Start(ctx.Done())
	go func() { <-ctx.Done(); p.queue.ShutDown() }()
	for {
		key, quit := p.queue.Get()
		if quit {
			return nil
		}
		a.refreshSubdomainKey(key, "")
		p.queue.Done(key)
	}
}

// watchPeerPods starts the cluster-wide pod watch once.
func (a *Agent) watchPeerPods(ctx context.Context) {
	p := a.peers
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pods != nil {
		return
	}
	inf := p.factory.Core().V1().Pods().Informer()
	if err := inf.AddIndexers(cache.Indexers{subdomainIndex: indexBySubdomain}); err != nil {
		a.log.Error("index peer pods", "err", err)
		return
	}
	changed := func(obj any) {
		if pod, ok := peerPod(obj); ok && pod.Spec.NodeName != a.cfg.NodeName {
			p.queue.AddAfter(pod.Namespace+"/"+pod.Spec.Subdomain, peerRefreshDelay)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: changed,
		UpdateFunc: func(o, n any) {
			if op, ok := peerPod(o); !ok || peerEntryChanged(op, n.(*corev1.Pod)) {
				changed(n)
			}
		},
		DeleteFunc: changed,
	}); err != nil {
		a.log.Error("watch peer pods", "err", err)
		return
	}
	p.pods = inf
	p.factory.Start(ctx.Done())
	a.log.Info("watching pods of other nodes for subdomain host entries")
}

func indexBySubdomain(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.Subdomain == "" {
		return nil, nil
	}
	return []string{pod.Namespace + "/" + pod.Spec.Subdomain}, nil
}

func peerPod(obj any) (*corev1.Pod, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	return pod, ok && pod.Spec.Subdomain != ""
}

// peerEntryChanged reports whether a pod's hosts entry changes from o to n.
func peerEntryChanged(o, n *corev1.Pod) bool {
	e1, ok1 := peerEntry(o)
	e2, ok2 := peerEntry(n)
	return ok1 != ok2 || e1.IP != e2.IP || e1.Names[0] != e2.Names[0] || o.Spec.NodeName != n.Spec.NodeName
}

// peerEntry is the hosts entry of a live pod with an IP.
func peerEntry(pod *corev1.Pod) (runtime.HostEntry, bool) {
	host := pod.Spec.Hostname
	if host == "" {
		host = pod.Name
	}
	e := runtime.HostEntry{IP: pod.Status.PodIP, Names: []string{
		fmt.Sprintf("%s.%s.%s.svc.cluster.local", host, pod.Spec.Subdomain, pod.Namespace), host}}
	live := pod.Status.PodIP != "" && pod.DeletionTimestamp == nil &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
	return e, live
}

// remotePeers lists the live pods of other nodes in pod's subdomain.
func (a *Agent) remotePeers(pod *corev1.Pod) []runtime.HostEntry {
	p := a.peers
	p.mu.Lock()
	inf := p.pods
	p.mu.Unlock()
	if inf == nil {
		return nil
	}
	objs, err := inf.GetIndexer().ByIndex(subdomainIndex, pod.Namespace+"/"+pod.Spec.Subdomain)
	if err != nil {
		return nil
	}
	var out []runtime.HostEntry
	for _, obj := range objs {
		o := obj.(*corev1.Pod)
		if o.UID == pod.UID || o.Spec.NodeName == a.cfg.NodeName || o.Spec.NodeName == "" {
			continue
		}
		if e, ok := peerEntry(o); ok {
			out = append(out, e)
		}
	}
	return out
}
