package gc

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
)

// absentCache remembers UIDs of owners known to be gone, so dependents can
// be classified without a live lookup. Callers hold the graph lock.
type absentCache struct{ c *lru.Cache }

func newAbsentCache(size int) *absentCache { return &absentCache{c: lru.New(size)} }

func (a *absentCache) add(uid types.UID)      { a.c.Add(uid, struct{}{}) }
func (a *absentCache) remove(uid types.UID)   { a.c.Remove(uid) }
func (a *absentCache) has(uid types.UID) bool { _, ok := a.c.Get(uid); return ok }
