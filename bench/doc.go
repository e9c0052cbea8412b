// Package bench measures batchlet end to end: it starts the embedded control
// plane on a fresh durable data dir per scenario, drives it through
// client-go, and reports throughput (pods/s), wall time, per-pod latencies
// from its own watch observation times, the process's peak RSS and CPU
// seconds, and the ratio to a baseline measured in the same run. Memory is
// reported as the kernel's peak of the whole resident set (VmHWM) and the
// sampled peaks of its anonymous part (the Go heap: what issue 16's memory
// goal counts) and its file-backed part (the store's mmap and the
// executable's pages). It is the engine of `batchlet bench`; sizes are
// parameters so tests can run every scenario tiny.
package bench
