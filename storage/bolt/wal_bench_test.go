package bolt

import (
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/batchlet/batchlet/storage"
)

// BenchmarkWALAppendSync appends one record (a group commit of 8 writes of
// about 1 KiB, as the sim bench commits) per op and waits for its
// fdatasync, into a fallocated segment (the fallback) and into a
// zero-filled one (a spare), and reports the fdatasync latency and the
// process CPU per commit (the kernel's own writeback workers come on top).
func BenchmarkWALAppendSync(b *testing.B) {
	for _, filled := range []bool{false, true} {
		name := map[bool]string{false: "fallocated", true: "zero-filled"}[filled]
		b.Run(name, func(b *testing.B) {
			w := benchWAL(b, filled)
			defer func() { _ = w.close(-1) }()
			events := benchEvents(8, 1024)
			lat := make([]time.Duration, 0, b.N)
			cpu0 := processCPU(b)
			b.ResetTimer()
			for i := range b.N {
				for j := range events {
					events[j].KV.ModRevision = int64(i*len(events) + j + 1)
				}
				if w.full() {
					b.StopTimer()
					if err := w.rotate(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				start := time.Now()
				if _, err := w.append(events); err != nil {
					b.Fatal(err)
				}
				if err := w.sync(w.f); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			cpu := processCPU(b) - cpu0
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// benchWAL opens a WAL of 64 MiB segments whose current segment is
// fallocated or, with filled, a zero-filled spare.
func benchWAL(b *testing.B, filled bool) *wal {
	b.Helper()
	w, err := openWAL(filepath.Join(b.TempDir(), "x.db"), 64<<20, nil, 0, false, quietLogger())
	if err != nil {
		b.Fatal(err)
	}
	if !filled {
		w.haltSpares() // every segment the fallback
		return w
	}
	w.mu.Lock()
	w.wantSpare(nil)
	w.mu.Unlock()
	w.spareWG.Wait()
	if err := w.rotate(); err != nil || !w.filled {
		b.Fatalf("rotate onto the spare: filled %v, %v", w.filled, err)
	}
	return w
}

func benchEvents(n, size int) []storage.Event {
	out := make([]storage.Event, n)
	for i := range out {
		out[i] = storage.Event{Type: storage.EventCreated, KV: storage.KeyValue{
			Key: fmt.Sprintf("/registry/pods/ns/p%d", i), Value: make([]byte, size)}}
	}
	return out
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
