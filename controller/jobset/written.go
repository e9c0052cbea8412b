package jobset

import "sync"

// writtenVersions remembers, per JobSet key, the resourceVersion a
// successful status update replaced, until the informer's copy moves past
// it. The controller reads JobSets from its cache; a sync that ran on the
// copy its last update replaced (a Job event arriving before the JobSet's
// own) would act on a status it has already moved on from, such as
// creating Jobs of a restart attempt it just counted past.
type writtenVersions struct {
	mu       sync.Mutex
	replaced map[string]string
}

func newWrittenVersions() *writtenVersions {
	return &writtenVersions{replaced: map[string]string{}}
}

// wrote records an update of key from resourceVersion from to to. An
// update the server made no change for (to == from) brings no event, so
// it is not waited for.
func (w *writtenVersions) wrote(key, from, to string) {
	if from == "" || to == from {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.replaced[key] = from
}

// behind reports whether a cached copy at resourceVersion rv predates the
// last update of key; once it does not, the update is forgotten.
func (w *writtenVersions) behind(key, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	from, ok := w.replaced[key]
	if ok && from == rv {
		return true
	}
	delete(w.replaced, key)
	return false
}

// forget drops what is known of key (the JobSet is gone).
func (w *writtenVersions) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.replaced, key)
}
