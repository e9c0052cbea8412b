package bolt

import "sync/atomic"

// Stats counts what the backend did since Open.
type Stats struct {
	// Writes is the number of write requests answered after a commit,
	// including those rejected by their precondition.
	Writes int64
	// Applied is the number of writes that produced a revision.
	Applied int64
	// Commits is the number of group commits (one WAL fdatasync each),
	// including failed ones.
	Commits int64
	// Checkpoints is the number of bbolt transactions that moved WAL
	// writes into the file (one fsync each).
	Checkpoints int64
	// FailedCommits is the number of transactions that did not commit.
	FailedCommits int64
	// MaxBatch is the largest number of writes committed together.
	MaxBatch int64
	// Compactions is the number of compaction transactions.
	Compactions int64
	// Reads is the number of Get and List calls.
	Reads int64
	// WALBytes is the number of bytes appended to the write-ahead log.
	WALBytes int64
	// Pending is the number of durable writes not yet checkpointed into
	// the bbolt file.
	Pending int64
}

// WritesPerCommit is the average group-commit batch size.
func (s Stats) WritesPerCommit() float64 {
	if s.Commits == 0 {
		return 0
	}
	return float64(s.Writes) / float64(s.Commits)
}

type counters struct {
	writes, applied, commits, checkpoints, failedCommits, maxBatch, compactions, reads, walBytes atomic.Int64
}

// record counts one successful commit of n writes, applied of them with a
// new revision. Only the finisher goroutine (pipeline.go) calls it.
func (c *counters) record(n, applied int) {
	c.writes.Add(int64(n))
	c.applied.Add(int64(applied))
	if int64(n) > c.maxBatch.Load() {
		c.maxBatch.Store(int64(n))
	}
}

// Stats returns a snapshot of the counters.
func (b *Backend) Stats() Stats {
	c := &b.stats
	b.mu.RLock()
	pending := len(b.ov.pending)
	b.mu.RUnlock()
	return Stats{
		Writes:        c.writes.Load(),
		Applied:       c.applied.Load(),
		Commits:       c.commits.Load(),
		Checkpoints:   c.checkpoints.Load(),
		FailedCommits: c.failedCommits.Load(),
		MaxBatch:      c.maxBatch.Load(),
		Compactions:   c.compactions.Load(),
		Reads:         c.reads.Load(),
		WALBytes:      c.walBytes.Load(),
		Pending:       int64(pending),
	}
}

// logStats reports at close how writes were batched, the figure that says
// what each durable write cost in fsyncs.
func (b *Backend) logStats() {
	st := b.Stats()
	b.opts.Logger.Debug("store closing", "file", b.path, "writes", st.Writes, "groupCommits", st.Commits,
		"writesPerCommit", st.WritesPerCommit(), "maxBatch", st.MaxBatch, "checkpoints", st.Checkpoints, "walBytes", st.WALBytes)
}
