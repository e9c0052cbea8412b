package scheduler

import (
	"container/heap"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// queue orders pending pods: higher spec.priority first, then older pods,
// then arrival order. Pods that did not fit wait aside until the cluster
// changes; gated pods wait until their scheduling gates are gone.
type queue struct {
	mu        sync.Mutex
	cond      *sync.Cond
	active    podHeap
	items     map[types.UID]*qItem
	seq       uint64
	moveCycle uint64
	closed    bool
}

type qState int

const (
	stateActive qState = iota
	stateUnschedulable
	stateGated
	stateInFlight
)

type qItem struct {
	pod      *corev1.Pod
	seq      uint64
	index    int
	state    qState
	popCycle uint64
	// moved: the cluster changed while the pod was in flight.
	moved bool
}

func newQueue() *queue {
	q := &queue{items: map[types.UID]*qItem{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// upsert adds a pending pod or refreshes one already known.
func (q *queue) upsert(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, ok := q.items[pod.UID]
	if !ok {
		q.seq++
		it = &qItem{pod: pod, seq: q.seq}
		q.items[pod.UID] = it
		q.place(it)
		return
	}
	specChanged := !reflect.DeepEqual(it.pod.Spec, pod.Spec)
	it.pod = pod
	switch it.state {
	case stateActive:
		heap.Fix(&q.active, it.index)
	case stateUnschedulable, stateGated:
		if specChanged {
			q.place(it)
		}
	case stateInFlight:
		if specChanged {
			it.moved = true
		}
	}
}

// place puts it in the active heap, or aside when gated.
func (q *queue) place(it *qItem) {
	if len(it.pod.Spec.SchedulingGates) > 0 {
		it.state = stateGated
		return
	}
	it.state = stateActive
	heap.Push(&q.active, it)
	q.cond.Signal()
}

// remove forgets a pod (deleted, or bound by someone else).
func (q *queue) remove(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, ok := q.items[uid]
	if !ok {
		return
	}
	if it.state == stateActive {
		heap.Remove(&q.active, it.index)
	}
	delete(q.items, uid)
}

// pop blocks for the next pod; ok is false once the queue is closed.
func (q *queue) pop() (*corev1.Pod, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active.Len() == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil, false
	}
	it := heap.Pop(&q.active).(*qItem)
	it.state = stateInFlight
	it.popCycle = q.moveCycle
	it.moved = false
	return it.pod, true
}

// done forgets a pod that was bound.
func (q *queue) done(uid types.UID) { q.remove(uid) }

// unschedulable parks a pod that did not fit; if the cluster changed while
// it was being scheduled it goes straight back to the active heap.
func (q *queue) unschedulable(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, ok := q.items[uid]
	if !ok || it.state != stateInFlight {
		return
	}
	if it.moved || it.popCycle != q.moveCycle {
		q.place(it)
		return
	}
	it.state = stateUnschedulable
}

// retry puts an in-flight pod back into the active heap (e.g. a bind error).
func (q *queue) retry(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if it, ok := q.items[uid]; ok && it.state == stateInFlight {
		q.place(it)
	}
}

// moveAll makes every parked pod active again after a cluster change.
func (q *queue) moveAll() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.moveCycle++
	for _, it := range q.items {
		if it.state == stateUnschedulable {
			q.place(it)
		}
	}
}

func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// podHeap implements heap.Interface over qItems.
type podHeap []*qItem

func (h podHeap) Len() int { return len(h) }
func (h podHeap) Less(i, j int) bool {
	pi, pj := priority(h[i].pod), priority(h[j].pod)
	if pi != pj {
		return pi > pj
	}
	ti, tj := h[i].pod.CreationTimestamp, h[j].pod.CreationTimestamp
	if !ti.Equal(&tj) {
		return ti.Before(&tj)
	}
	return h[i].seq < h[j].seq
}
func (h podHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *podHeap) Push(x any) {
	it := x.(*qItem)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *podHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.index = -1
	return it
}

func priority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}
