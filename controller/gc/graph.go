package gc

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Finalizers the API server adds for Foreground and Orphan propagation.
const (
	FinalizerForeground = metav1.FinalizerDeleteDependents // "foregroundDeletion"
	FinalizerOrphan     = metav1.FinalizerOrphanDependents // "orphan"
)

// identity names one object precisely enough to GET, PATCH or DELETE it.
type identity struct {
	res       Resource
	namespace string
	name      string
	uid       types.UID
}

// node is one object in the owner graph. A virtual node is known only
// because some dependent references it; it has not been observed.
type node struct {
	id                 identity
	virtual            bool
	owners             []metav1.OwnerReference
	dependents         map[types.UID]*node
	beingDeleted       bool
	deletingDependents bool
	orphaning          bool
}

// blocksOwner reports whether n holds a blockOwnerDeletion reference to owner.
func (n *node) blocksOwner(owner types.UID) bool {
	for _, r := range n.owners {
		if r.UID == owner && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
			return true
		}
	}
	return false
}

// graph is the owner/dependent graph built from informer events.
type graph struct {
	mu     sync.Mutex
	nodes  map[types.UID]*node
	mapper *kindMapper
	absent *absentCache
}

func newGraph(m *kindMapper) *graph {
	return &graph{nodes: map[types.UID]*node{}, mapper: m, absent: newAbsentCache(4096)}
}

// enqueue collects the work an event produces.
type enqueue struct {
	attemptToDelete []types.UID
	attemptToOrphan []types.UID
}

func (e *enqueue) del(uids ...types.UID) { e.attemptToDelete = append(e.attemptToDelete, uids...) }

// observe records an added or updated object and returns the work it causes.
func (g *graph) observe(res Resource, obj metav1.Object) enqueue {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.observeLocked(res, obj)
}

// observeVerified records obj, read live to verify the virtual node of its
// uid, as observed: the informer may have reported it before the node was
// made (a plain leaf is not kept) and will not report it again until it
// changes. A node no longer virtual, or one whose deletion was seen
// meanwhile, is left alone.
func (g *graph) observeVerified(res Resource, obj metav1.Object) enqueue {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n, ok := g.nodes[obj.GetUID()]; !ok || !n.virtual || g.absent.has(obj.GetUID()) {
		return enqueue{}
	}
	return g.observeLocked(res, obj)
}

func (g *graph) observeLocked(res Resource, obj metav1.Object) enqueue {
	var out enqueue
	n, existed := g.nodes[obj.GetUID()]
	if !existed {
		n = &node{dependents: map[types.UID]*node{}}
		g.nodes[obj.GetUID()] = n
	}
	wasVirtual, wasDeletingDependents, wasOrphaning := n.virtual || !existed, n.deletingDependents, n.orphaning
	n.id = identity{res: res, namespace: obj.GetNamespace(), name: obj.GetName(), uid: obj.GetUID()}
	n.virtual = false
	g.absent.remove(obj.GetUID())
	g.updateOwners(n, obj.GetOwnerReferences(), &out)
	n.beingDeleted = obj.GetDeletionTimestamp() != nil
	n.deletingDependents = n.beingDeleted && slices.Contains(obj.GetFinalizers(), FinalizerForeground)
	n.orphaning = n.beingDeleted && slices.Contains(obj.GetFinalizers(), FinalizerOrphan)
	if n.deletingDependents && (!wasDeletingDependents || wasVirtual) {
		for uid := range n.dependents {
			out.del(uid)
		}
		out.del(n.id.uid)
	}
	if n.orphaning && (!wasOrphaning || wasVirtual) {
		out.attemptToOrphan = append(out.attemptToOrphan, n.id.uid)
	}
	if n.plainLeaf() {
		delete(g.nodes, n.id.uid)
	}
	return out
}

// plainLeaf reports whether n has neither owners nor dependents and waits
// for nothing: the collector has nothing to do with it, so the graph does
// not keep it (its memory would follow the history of objects nobody owns,
// such as ContainerResults and finished Jobs). When a dependent names it
// later, it comes back as a virtual node that a live read verifies.
func (n *node) plainLeaf() bool {
	return len(n.owners) == 0 && len(n.dependents) == 0 && !n.deletingDependents && !n.orphaning
}

// updateOwners rewires n's owner edges to refs.
func (g *graph) updateOwners(n *node, refs []metav1.OwnerReference, out *enqueue) {
	old := n.owners
	n.owners = slices.Clone(refs)
	for _, r := range old {
		if !hasOwner(refs, r.UID) || blockChanged(old, refs, r.UID) {
			g.unlinkOrNotify(n, r.UID, !hasOwner(refs, r.UID), out)
		}
	}
	for _, r := range refs {
		if hasOwner(old, r.UID) {
			continue
		}
		g.link(n, r, out)
	}
}

// unlinkOrNotify drops the edge from owner to n (when remove is set) and
// wakes an owner that waits for its dependents.
func (g *graph) unlinkOrNotify(n *node, owner types.UID, remove bool, out *enqueue) {
	o, ok := g.nodes[owner]
	if !ok {
		return
	}
	if remove {
		delete(o.dependents, n.id.uid)
		if o.virtual && len(o.dependents) == 0 {
			delete(g.nodes, owner)
			return
		}
	}
	if o.deletingDependents {
		out.del(owner)
	}
}

// link adds the edge from the owner named by r to n.
func (g *graph) link(n *node, r metav1.OwnerReference, out *enqueue) {
	o, ok := g.nodes[r.UID]
	if !ok {
		if g.absent.has(r.UID) {
			out.del(n.id.uid)
			return
		}
		res, known := g.mapper.lookup(r.APIVersion, r.Kind)
		if !known {
			return
		}
		ns := n.id.namespace
		if !res.Namespaced {
			ns = ""
		}
		o = &node{id: identity{res: res, namespace: ns, name: r.Name, uid: r.UID}, virtual: true, dependents: map[types.UID]*node{}}
		g.nodes[r.UID] = o
		out.del(r.UID)
	}
	o.dependents[n.id.uid] = n
	if o.deletingDependents {
		out.del(n.id.uid)
	}
}

// linkKind links the owners of kind gvk that were an unknown kind when
// their dependents were observed (a resource discovered since), and
// returns the work it causes.
func (g *graph) linkKind(gvk schema.GroupVersionKind) enqueue {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out enqueue
	for _, n := range g.nodes {
		if n.virtual {
			continue
		}
		for _, r := range n.owners {
			gv, err := schema.ParseGroupVersion(r.APIVersion)
			if err != nil || gv.WithKind(r.Kind) != gvk {
				continue
			}
			if o, ok := g.nodes[r.UID]; ok && o.dependents[n.id.uid] != nil {
				continue
			}
			g.link(n, r, &out)
		}
	}
	return out
}

// forget removes a deleted object and returns the work it causes.
func (g *graph) forget(uid types.UID) enqueue {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out enqueue
	g.absent.add(uid)
	n, ok := g.nodes[uid]
	if !ok {
		return out
	}
	g.dropNode(n, &out)
	return out
}

// dropNode removes n, wakes its dependents and any owner waiting for it.
func (g *graph) dropNode(n *node, out *enqueue) {
	delete(g.nodes, n.id.uid)
	for uid := range n.dependents {
		out.del(uid)
	}
	for _, r := range n.owners {
		g.unlinkOrNotify(n, r.UID, true, out)
	}
}

// markAbsent records that a virtual node does not exist and drops it.
func (g *graph) markAbsent(uid types.UID) enqueue {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out enqueue
	g.absent.add(uid)
	if n, ok := g.nodes[uid]; ok && n.virtual {
		g.dropNode(n, &out)
	}
	return out
}

// get returns a copy of the node's identity and state, without edges.
func (g *graph) get(uid types.UID) (node, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.nodes[uid]
	if !ok {
		return node{}, false
	}
	c := *n
	c.dependents = nil
	c.owners = slices.Clone(n.owners)
	return c, true
}

// dependentsOf returns copies of the dependents of uid.
func (g *graph) dependentsOf(uid types.UID) []node {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.nodes[uid]
	if !ok {
		return nil
	}
	out := make([]node, 0, len(n.dependents))
	for _, d := range n.dependents {
		c := *d
		c.dependents = nil
		c.owners = slices.Clone(d.owners)
		out = append(out, c)
	}
	return out
}

// hasDependents reports whether uid has any dependent, and whether one of
// them is itself deleting its dependents.
func (g *graph) hasDependents(uid types.UID) (any, deleting bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.nodes[uid]
	if !ok {
		return false, false
	}
	for _, d := range n.dependents {
		if d.deletingDependents {
			deleting = true
		}
	}
	return len(n.dependents) > 0, deleting
}

func hasOwner(refs []metav1.OwnerReference, uid types.UID) bool {
	return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == uid })
}

func blockChanged(old, cur []metav1.OwnerReference, uid types.UID) bool {
	return blocking(old, uid) && !blocking(cur, uid)
}

func blocking(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
			return true
		}
	}
	return false
}
