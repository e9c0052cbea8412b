package job

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// podExpectations counts the pod creations and deletions a Job still
// expects to see through the informer, so a sync never acts on a stale
// cache (no double creates). Unmet expectations expire after a timeout.
type podExpectations struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	timeout time.Duration
	byKey   map[string]*expectation
}

type expectation struct {
	add, del  int64
	timestamp time.Time
}

func newPodExpectations(c clock.PassiveClock, timeout time.Duration) *podExpectations {
	return &podExpectations{clock: c, timeout: timeout, byKey: map[string]*expectation{}}
}

// satisfied: nothing pending, no record, or the record expired.
func (e *podExpectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.byKey[key]
	if !ok {
		return true
	}
	if x.add <= 0 && x.del <= 0 {
		return true
	}
	return e.clock.Since(x.timestamp) > e.timeout
}

func (e *podExpectations) expect(key string, add, del int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byKey[key] = &expectation{add: int64(add), del: int64(del), timestamp: e.clock.Now()}
}

func (e *podExpectations) lower(key string, add, del int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.byKey[key]; ok {
		x.add -= int64(add)
		x.del -= int64(del)
	}
}

func (e *podExpectations) creationObserved(key string) { e.lower(key, 1, 0) }
func (e *podExpectations) deletionObserved(key string) { e.lower(key, 0, 1) }

func (e *podExpectations) delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, key)
}

// finalizerExpectations holds, per Job, the pod UIDs whose tracking
// finalizer removal was sent but not yet seen by the informer. Those pods
// are not counted again meanwhile.
type finalizerExpectations struct {
	mu    sync.Mutex
	byKey map[string]sets.Set[types.UID]
}

func newFinalizerExpectations() *finalizerExpectations {
	return &finalizerExpectations{byKey: map[string]sets.Set[types.UID]{}}
}

func (f *finalizerExpectations) expectRemoved(key string, uids []types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.byKey[key]
	if !ok {
		s = sets.New[types.UID]()
		f.byKey[key] = s
	}
	s.Insert(uids...)
}

func (f *finalizerExpectations) observed(key string, uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.byKey[key]; ok {
		s.Delete(uid)
		if s.Len() == 0 {
			delete(f.byKey, key)
		}
	}
}

func (f *finalizerExpectations) expected(key string) sets.Set[types.UID] {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byKey[key].Clone()
}

func (f *finalizerExpectations) delete(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.byKey, key)
}
