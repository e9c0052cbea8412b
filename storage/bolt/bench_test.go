package bolt_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/bolt"
)

// benchValue is about the size of a small pod object in JSON.
var benchValue = make([]byte, 1024)

// BenchmarkCreateUpdate64 runs 64 concurrent writers; each b.N iteration is
// one create followed by one update of the same key (two durable writes).
func BenchmarkCreateUpdate64(b *testing.B) {
	benchWriters(b, 64)
}

func BenchmarkCreateUpdate1(b *testing.B) {
	benchWriters(b, 1)
}

func benchWriters(b *testing.B, writers int) {
	be, _ := openTemp(b, bolt.Options{CompactInterval: -1})
	var next atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	before := be.Stats()
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				key := fmt.Sprintf("/registry/pods/ns/w%02d-%d", w, i)
				rev, err := be.Create(ctx, key, benchValue)
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := be.Update(ctx, key, benchValue, rev); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	st := be.Stats()
	writes := float64(st.Writes - before.Writes)
	commits := float64(st.Commits - before.Commits)
	b.ReportMetric(writes/elapsed.Seconds(), "writes/s")
	ckpts := float64(st.Checkpoints - before.Checkpoints)
	if commits > 0 {
		// A group commit is one WAL fdatasync; a checkpoint is a bbolt
		// commit with two (data, then meta page).
		b.ReportMetric(writes/commits, "writes/walsync")
		b.ReportMetric(writes/(commits+2*ckpts), "writes/fsync")
	}
}

func seedBench(b *testing.B, n int) *bolt.Backend {
	be, _ := openTemp(b, bolt.Options{CompactInterval: -1})
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				if _, err := be.Create(context.Background(), fmt.Sprintf("/registry/pods/ns/p%05d", i), benchValue); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return be
}

func BenchmarkGet(b *testing.B) {
	be := seedBench(b, 1000)
	ctx := context.Background()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := be.Get(ctx, fmt.Sprintf("/registry/pods/ns/p%05d", i%1000)); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkList500 lists pages of 500 out of 1000 keys.
func BenchmarkList500(b *testing.B) {
	be := seedBench(b, 1000)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		res, err := be.List(ctx, "/registry/pods/", storage.ListOptions{Limit: 500})
		if err != nil || len(res.Items) != 500 {
			b.Fatalf("List: %d items, %v", len(res.Items), err)
		}
	}
}

func BenchmarkCreateUpdate256(b *testing.B) {
	benchWriters(b, 256)
}

func BenchmarkCreateUpdate8(b *testing.B) {
	benchWriters(b, 8)
}
