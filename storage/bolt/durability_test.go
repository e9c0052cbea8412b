package bolt_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/bolt"
)

func TestReopenKeepsWritesAndRevisions(t *testing.T) {
	b, path := openTemp(t, bolt.Options{CompactInterval: -1})
	ctx := context.Background()
	if _, err := b.Create(ctx, "/seed", nil); err != nil { // keeps revisions > 1
		t.Fatal(err)
	}
	c, err := b.Create(ctx, "/a/1", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := b.Update(ctx, "/a/1", []byte("two"), c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "/a/2", []byte("gone")); err != nil {
		t.Fatal(err)
	}
	d, _, err := b.Delete(ctx, "/a/2", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Compact(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2, err := bolt.Open(path, bolt.Options{CompactInterval: -1})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer b2.Close()
	if got := b2.CurrentRevision(); got != d {
		t.Fatalf("CurrentRevision after reopen %d, want %d", got, d)
	}
	if got := b2.CompactRevision(); got != c {
		t.Fatalf("CompactRevision after reopen %d, want %d", got, c)
	}
	kv, err := b2.Get(ctx, "/a/1")
	if err != nil || string(kv.Value) != "two" || kv.CreateRevision != c || kv.ModRevision != u {
		t.Fatalf("after reopen got %+v, %v", kv, err)
	}
	if _, err := b2.Get(ctx, "/a/2"); err != storage.ErrNotFound {
		t.Fatalf("deleted key after reopen: %v", err)
	}
	next, err := b2.Create(ctx, "/a/3", []byte("three"))
	if err != nil || next != d+1 {
		t.Fatalf("first write after reopen got revision %d (%v), want %d", next, err, d+1)
	}
	// The watch history survived the restart: replay from the compaction
	// point sees every later event with its previous value.
	ch, err := b2.Watch(ctx, "/a/", c)
	if err != nil {
		t.Fatalf("Watch from %d after reopen: %v", c, err)
	}
	evs := receiveN(t, ch, 4)
	wantTypes := []storage.EventType{storage.EventUpdated, storage.EventCreated, storage.EventDeleted, storage.EventCreated}
	for i, ev := range evs {
		if ev.Type != wantTypes[i] || ev.KV.ModRevision != c+int64(i)+1 {
			t.Fatalf("replayed event %d: %s@%d, want %s@%d", i, ev.Type, ev.KV.ModRevision, wantTypes[i], c+int64(i)+1)
		}
	}
	if evs[0].PrevKV == nil || string(evs[0].PrevKV.Value) != "one" || string(evs[2].KV.Value) != "gone" {
		t.Fatalf("replayed values wrong: %+v / %+v", evs[0].PrevKV, evs[2].KV)
	}
	_, err = b2.Watch(ctx, "/a/", c-1)
	if err != storage.ErrCompacted {
		t.Fatalf("Watch before the compaction point after reopen: %v", err)
	}
}

func receiveN(t *testing.T, ch <-chan []storage.Event, n int) []storage.Event {
	t.Helper()
	var out []storage.Event
	for len(out) < n {
		batch, ok := <-ch
		if !ok {
			t.Fatalf("watch closed after %d events", len(out))
		}
		out = append(out, batch...)
	}
	return out
}

const crashEnv = "BOLT_CRASH_CHILD_PATH"

// crashOptions keeps WAL segments and checkpoints small so a crash lands
// amid rotations and checkpoints.
var crashOptions = bolt.Options{CompactInterval: -1, WALSegmentSize: 64 << 10, CheckpointInterval: time.Millisecond}

// TestCrashChild is the child of TestCrashKeepsAcknowledgedWrites: it writes
// as fast as it can and prints every acknowledged write until it is killed.
// Each key goes through create, update and (for odd keys) delete.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("only runs as the child of the crash test")
	}
	b, err := bolt.Open(path, crashOptions)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	ack := func(rev int64, op, key string) {
		mu.Lock()
		fmt.Fprintf(out, "%d %s %s\n", rev, op, key)
		_ = out.Flush()
		mu.Unlock()
	}
	fail := func(err error) {
		mu.Lock()
		fmt.Fprintf(out, "ERR %v\n", err)
		_ = out.Flush()
		os.Exit(2)
	}
	for w := range 32 {
		go func() {
			ctx := context.Background()
			for i := 0; ; i++ {
				key := fmt.Sprintf("/crash/%02d/%07d", w, i)
				rev, err := b.Create(ctx, key, []byte("c"+key))
				if err != nil {
					fail(err)
				}
				ack(rev, "create", key)
				if rev, err = b.Update(ctx, key, []byte("u"+key), rev); err != nil {
					fail(err)
				}
				ack(rev, "update", key)
				if i%2 == 1 {
					if rev, _, err = b.Delete(ctx, key, rev); err != nil {
						fail(err)
					}
					ack(rev, "delete", key)
				}
			}
		}()
	}
	select {}
}

// ackedState is the last acknowledged write of a key.
type ackedState struct {
	op  string
	rev int64
}

func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	_, path := tempPath(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]ackedState{}
	record := func(line string) {
		if strings.HasPrefix(line, "ERR") {
			t.Errorf("child failed: %s", line)
		}
		if rev, op, key, ok := parseAck(line); ok {
			acked[key] = ackedState{op: op, rev: rev}
		}
	}
	sc := bufio.NewScanner(stdout)
	const killAfter = 20_000
	for n := 0; n < killAfter && sc.Scan(); n++ {
		record(sc.Text())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Lines the child flushed before dying were acknowledged too.
	for sc.Scan() {
		record(sc.Text())
	}
	_ = cmd.Wait()
	if len(acked) < killAfter/3 {
		t.Fatalf("child acknowledged only %d keys", len(acked))
	}

	b, err := bolt.Open(path, crashOptions)
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer b.Close()
	var maxRev int64
	for key, st := range acked {
		checkAcked(t, b, key, st)
		maxRev = max(maxRev, st.rev)
	}
	if cur := b.CurrentRevision(); cur < maxRev {
		t.Fatalf("CurrentRevision %d after crash is below acknowledged %d", cur, maxRev)
	}
	checkHistoryPrevs(t, b, b.CurrentRevision())
	next, err := b.Create(context.Background(), "/after-crash", nil)
	if err != nil || next <= maxRev {
		t.Fatalf("write after crash got revision %d (%v), want > %d", next, err, maxRev)
	}
	t.Logf("%d acknowledged keys survived SIGKILL; revision now %d", len(acked), next)
}

// checkHistoryPrevs checks that every event up to upTo, from the file's
// log or replayed from the write-ahead log (whose records leave previous
// values to replay), carries the values the child wrote.
func checkHistoryPrevs(t *testing.T, b *bolt.Backend, upTo int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := b.Watch(ctx, "/crash/", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range receiveN(t, ch, int(upTo-1)) {
		key := ev.KV.Key
		switch ev.Type {
		case storage.EventUpdated:
			if ev.PrevKV == nil || string(ev.PrevKV.Value) != "c"+key || string(ev.KV.Value) != "u"+key {
				t.Fatalf("update of %s@%d reads back as %+v", key, ev.KV.ModRevision, ev)
			}
		case storage.EventDeleted:
			if ev.PrevKV == nil || string(ev.PrevKV.Value) != "u"+key || string(ev.KV.Value) != "u"+key {
				t.Fatalf("delete of %s@%d reads back as %+v", key, ev.KV.ModRevision, ev)
			}
		}
	}
}

// checkAcked checks that a key holds its last acknowledged write, or the
// write that follows it in the child's sequence (durable but not yet
// acknowledged when the child died).
func checkAcked(t *testing.T, b *bolt.Backend, key string, st ackedState) {
	t.Helper()
	kv, err := b.Get(context.Background(), key)
	deletable := strings.HasSuffix(key, "1") || strings.HasSuffix(key, "3") || strings.HasSuffix(key, "5") ||
		strings.HasSuffix(key, "7") || strings.HasSuffix(key, "9")
	switch st.op {
	case "delete":
		if err != storage.ErrNotFound {
			t.Fatalf("acknowledged delete of %s@%d undone: %+v %v", key, st.rev, kv, err)
		}
	case "update":
		if err == storage.ErrNotFound && deletable {
			return // its delete made it to disk
		}
		if err != nil || kv.ModRevision != st.rev || string(kv.Value) != "u"+key {
			t.Fatalf("acknowledged update %s@%d reads back as %q@%d (%v)", key, st.rev, kv.Value, kv.ModRevision, err)
		}
	case "create":
		if err != nil || kv.CreateRevision != st.rev || kv.ModRevision < st.rev {
			t.Fatalf("acknowledged create %s@%d reads back as %q@%d/%d (%v)", key, st.rev, kv.Value, kv.CreateRevision, kv.ModRevision, err)
		}
	}
}

func parseAck(line string) (int64, string, string, bool) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return 0, "", "", false
	}
	rev, err := strconv.ParseInt(f[0], 10, 64)
	return rev, f[1], f[2], err == nil
}

func tempPath(t *testing.T) (string, string) {
	dir := t.TempDir()
	return dir, dir + "/store.db"
}
