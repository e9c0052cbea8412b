package bolt

import "github.com/prometheus/client_golang/prometheus"

// Collector exports a backend's Stats as Prometheus metrics. Register it
// with the registry of your choice; nothing is registered globally.
type Collector struct {
	b     *Backend
	descs map[string]*prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a collector for b.
func NewCollector(b *Backend) *Collector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("batchlet_storage_"+name, help, nil, nil)
	}
	return &Collector{b: b, descs: map[string]*prometheus.Desc{
		"writes":        d("writes_total", "Write requests answered after a group commit, including precondition failures."),
		"applied":       d("applied_writes_total", "Writes that produced a new revision."),
		"commits":       d("group_commits_total", "Group commits, one write-ahead log fdatasync each."),
		"failed":        d("failed_commits_total", "Group commits that failed."),
		"checkpoints":   d("checkpoints_total", "Checkpoints of the write-ahead log into the bbolt file."),
		"compactions":   d("compaction_transactions_total", "Transactions that deleted compacted log entries."),
		"reads":         d("reads_total", "Get and List calls."),
		"revision":      d("current_revision", "Revision of the latest durable write."),
		"compactRev":    d("compact_revision", "Revision up to which history has been compacted."),
		"maxBatch":      d("max_batch_size", "Largest number of writes committed together."),
		"walBytes":      d("wal_bytes_total", "Bytes appended to the write-ahead log."),
		"pendingWrites": d("uncheckpointed_writes", "Durable writes not yet checkpointed into the bbolt file."),
	}}
}

// Describe sends every metric description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect sends the current values.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.b.Stats()
	counter := func(name string, v int64) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.CounterValue, float64(v))
	}
	gauge := func(name string, v int64) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, float64(v))
	}
	counter("writes", st.Writes)
	counter("applied", st.Applied)
	counter("commits", st.Commits)
	counter("failed", st.FailedCommits)
	counter("checkpoints", st.Checkpoints)
	counter("compactions", st.Compactions)
	counter("reads", st.Reads)
	counter("walBytes", st.WALBytes)
	gauge("revision", c.b.CurrentRevision())
	gauge("compactRev", c.b.CompactRevision())
	gauge("maxBatch", st.MaxBatch)
	gauge("pendingWrites", st.Pending)
}
