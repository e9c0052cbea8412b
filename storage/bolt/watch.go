package bolt

import (
	"context"

	"github.com/batchlet/batchlet/storage"
)

// Watch streams every event under prefix after fromRev (0: from now),
// replaying the in-memory history first. History older than HistoryWindow
// events, or compacted, yields storage.ErrCompacted.
func (b *Backend) Watch(ctx context.Context, prefix string, fromRev int64) (<-chan []storage.Event, error) {
	if err := b.readable(ctx); err != nil {
		return nil, err
	}
	if fromRev > b.rev.Load() {
		return nil, storage.ErrFuture
	}
	return b.hub.Watch(ctx, prefix, fromRev, b.compactRev.Load())
}
