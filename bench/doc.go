// Package bench measures batchlet end to end: it starts the embedded control
// plane on a fresh durable data dir per scenario, drives it through
// client-go, and reports throughput (pods/s), wall time, per-pod latencies
// from its own watch observation times, the process's peak RSS and CPU
// seconds, and the ratio to a baseline measured in the same run. It is the
// engine of `batchlet bench`; sizes are parameters so tests can run every
// scenario tiny.
package bench
