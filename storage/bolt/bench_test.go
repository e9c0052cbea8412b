package bolt_test

import (
	"context"
	"fmt"
	"os"
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

// BenchmarkSimPodMix replays the writes one pod costs in `batchlet bench
// sim`, from 64 concurrent writers: create the pod, bind it, record the
// Scheduled event, patch its status, create its container result, remove
// the Job's finalizer and delete it (pod GC): 7 durable writes per b.N
// iteration, handing values over as the API server does. The timer covers
// the checkpoints into bbolt too, so B/op and
// allocs/op are the store's whole cost per pod.
func BenchmarkSimPodMix(b *testing.B) {
	be, path := openTemp(b, bolt.Options{CompactInterval: -1})
	pod := make([]byte, 2600) // a sim pod as stored (protobuf), about
	status := make([]byte, 3100)
	event := make([]byte, 700)
	result := make([]byte, 400)
	var next atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	before := be.Stats()
	b.ResetTimer()
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := simPod(ctx, be, fmt.Sprintf("w%02d-%d", w, i), pod, status, event, result); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := be.Checkpoint(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	st := be.Stats()
	if commits := float64(st.Commits - before.Commits); commits > 0 {
		b.ReportMetric(float64(st.Writes-before.Writes)/commits, "writes/walsync")
	}
	b.ReportMetric(float64(st.WALBytes-before.WALBytes)/float64(b.N), "walB/op")
	if info, err := os.Stat(path); err == nil { // all of the log: nothing is compacted
		b.ReportMetric(float64(info.Size())/float64(b.N), "fileB/op")
	}
}

// simPod makes the 7 writes of one sim pod's life.
func simPod(ctx context.Context, be *bolt.Backend, name string, pod, status, event, result []byte) error {
	key := "/registry/pods/bench/" + name
	rev, err := be.CreateOwned(ctx, key, pod)
	if err != nil {
		return err
	}
	if rev, err = be.UpdateOwned(ctx, key, pod, rev); err != nil { // binding
		return err
	}
	if _, err = be.CreateOwned(ctx, "/registry/events.k8s.io/bench/"+name+".scheduled", event); err != nil {
		return err
	}
	if rev, err = be.UpdateOwned(ctx, key, status, rev); err != nil { // status
		return err
	}
	if _, err = be.CreateOwned(ctx, "/registry/containerresults/bench/"+name, result); err != nil {
		return err
	}
	if rev, err = be.UpdateOwned(ctx, key, status, rev); err != nil { // finalizer removed
		return err
	}
	_, _, err = be.Delete(ctx, key, rev)
	return err
}
