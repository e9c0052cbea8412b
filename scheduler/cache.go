package scheduler

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nodeInfo is one node with the pods accounted on it.
type nodeInfo struct {
	node        *corev1.Node
	allocatable resources
	requested   resources
	// scored is requested with the scoring defaults for missing requests.
	scored resources
	pods   map[types.UID]*podEntry
}

// podEntry is a pod counted on a node; assumed pods are bound by us but not
// yet seen bound by the informer.
type podEntry struct {
	pod     *corev1.Pod
	req     resources
	score   resources // req with the scoring defaults
	assumed bool
}

func newPodEntry(pod *corev1.Pod, assumed bool) *podEntry {
	return &podEntry{pod: pod, req: podRequests(pod), score: podScoreRequests(pod), assumed: assumed}
}

func newNodeInfo() *nodeInfo { return &nodeInfo{pods: map[types.UID]*podEntry{}} }

func (n *nodeInfo) setNode(node *corev1.Node) {
	n.node = node
	n.allocatable = fromList(node.Status.Allocatable)
}

func (n *nodeInfo) addPod(e *podEntry) {
	n.pods[e.pod.UID] = e
	n.requested.add(e.req)
	n.scored.add(e.score)
}

func (n *nodeInfo) removePod(uid types.UID) {
	if e, ok := n.pods[uid]; ok {
		n.requested.sub(e.req)
		n.scored.sub(e.score)
		delete(n.pods, uid)
	}
}

// nodeCache is the scheduler's view of nodes and what runs on them. Pods are
// known by node even before their node is observed.
type nodeCache struct {
	mu     sync.Mutex
	nodes  map[string]*nodeInfo
	podsAt map[types.UID]string
}

func newCache() *nodeCache {
	return &nodeCache{nodes: map[string]*nodeInfo{}, podsAt: map[types.UID]string{}}
}

func (c *nodeCache) info(name string) *nodeInfo {
	n, ok := c.nodes[name]
	if !ok {
		n = newNodeInfo()
		c.nodes[name] = n
	}
	return n
}

// setNode adds or updates a node.
func (c *nodeCache) setNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.info(node.Name).setNode(node)
}

// removeNode forgets a node; its pods stay counted until they go.
func (c *nodeCache) removeNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.nodes[name]; ok {
		n.node = nil
		if len(n.pods) == 0 {
			delete(c.nodes, name)
		}
	}
}

// upsertPod accounts an assigned pod as observed (confirming an assumption).
func (c *nodeCache) upsertPod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(pod.UID)
	c.addLocked(pod, false)
}

// assume counts pod on nodeName before the binding is observed.
func (c *nodeCache) assume(pod *corev1.Pod, nodeName string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A shallow copy is enough: only NodeName differs, and neither the
	// informer's pod nor cache entries are ever mutated.
	p := *pod
	p.Spec.NodeName = nodeName
	c.removeLocked(pod.UID)
	c.addLocked(&p, true)
}

// isAssumed reports whether uid is assumed and not yet confirmed.
func (c *nodeCache) isAssumed(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	name, ok := c.podsAt[uid]
	if !ok {
		return false
	}
	e := c.nodes[name].pods[uid]
	return e != nil && e.assumed
}

// removePod forgets a pod (deleted, terminal, or a failed assumption).
func (c *nodeCache) removePod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(uid)
}

func (c *nodeCache) addLocked(pod *corev1.Pod, assumed bool) {
	c.info(pod.Spec.NodeName).addPod(newPodEntry(pod, assumed))
	c.podsAt[pod.UID] = pod.Spec.NodeName
}

func (c *nodeCache) removeLocked(uid types.UID) {
	name, ok := c.podsAt[uid]
	if !ok {
		return
	}
	delete(c.podsAt, uid)
	n := c.nodes[name]
	n.removePod(uid)
	if n.node == nil && len(n.pods) == 0 {
		delete(c.nodes, name)
	}
}

// podsOn returns the entries counted on a node (entries are never mutated).
func (c *nodeCache) podsOn(name string) []*podEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[name]
	if !ok {
		return nil
	}
	out := make([]*podEntry, 0, len(n.pods))
	for _, e := range n.pods {
		out = append(out, e)
	}
	return out
}

// snapshot copies the observed nodes (without their pods), sorted by name.
func (c *nodeCache) snapshot() []*nodeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*nodeInfo, 0, len(c.nodes))
	for _, n := range c.nodes {
		if n.node == nil {
			continue
		}
		cp := &nodeInfo{node: n.node, allocatable: n.allocatable, requested: n.requested, scored: n.scored}
		cp.requested.scalar = cloneScalar(n.requested.scalar)
		cp.scored.scalar = nil // scoring reads cpu and memory only
		out = append(out, cp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].node.Name < out[j].node.Name })
	return out
}

// node returns the cached node object, nil when unknown.
func (c *nodeCache) node(name string) *corev1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.nodes[name]; ok {
		return n.node
	}
	return nil
}
