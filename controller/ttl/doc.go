// Package ttl is the TTL-after-finished controller: it deletes finished
// Jobs once spec.ttlSecondsAfterFinished has passed since they finished.
package ttl
