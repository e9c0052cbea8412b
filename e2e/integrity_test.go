package e2e

import (
	"context"
	bin "encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// walRecordInfo is one record of a WAL segment and the keys it writes.
type walRecordInfo struct {
	off, size int
	keys      []string
}

// walRecords splits a segment into its records (format: storage/bolt/wal.go).
func walRecords(t *testing.T, data []byte) []walRecordInfo {
	t.Helper()
	var out []walRecordInfo
	for off := 0; off+8 <= len(data); {
		n := int(bin.LittleEndian.Uint32(data[off:]))
		if n == 0 || off+8+n > len(data) {
			break
		}
		rec := walRecordInfo{off: off, size: 8 + n}
		p := data[off+8 : off+8+n]
		for len(p) > 0 {
			_, a := bin.Uvarint(p) // revision
			l, b := bin.Uvarint(p[a:])
			ev := p[a+b : a+b+int(l)]
			kl, c := bin.Uvarint(ev[1:]) // after the event type
			rec.keys = append(rec.keys, string(ev[1+c:1+c+int(kl)]))
			p = p[a+b+int(l):]
		}
		out = append(out, rec)
		off += rec.size
	}
	return out
}

// lastSegment is the newest WAL segment with records.
func lastSegment(t *testing.T, dataDir string) (string, []byte) {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dataDir, "state.db.wal-*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(segs)
	for i := len(segs) - 1; i >= 0; i-- {
		data, err := os.ReadFile(segs[i])
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 {
			return segs[i], data
		}
	}
	t.Fatalf("no WAL segment with records in %s", dataDir)
	return "", nil
}

// TestServerRefusesDamagedWAL: a byte changed in a middle WAL record makes
// `batchlet server` refuse to start, naming the segment and offset; a torn
// last record is dropped and everything acknowledged before it is served.
func TestServerRefusesDamagedWAL(t *testing.T) {
	s := startServer(t)
	var manifest strings.Builder
	const n = 30
	for i := range n {
		fmt.Fprintf(&manifest, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%02d\n  namespace: default\ndata:\n  k: value-%02d\n", i, i)
	}
	if out, err := s.kubectlStdin(manifest.String(), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	s.kill9()

	seg, pristine := lastSegment(t, s.dataDir)
	records := walRecords(t, pristine)
	if len(records) < 3 {
		t.Fatalf("%s holds %d records, want several", seg, len(records))
	}
	mid := records[len(records)/2]
	damaged := append([]byte(nil), pristine...)
	damaged[mid.off+8+mid.size/2] ^= 0xFF
	if err := os.WriteFile(seg, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "server", "--data-dir", s.dataDir, "--port", fmt.Sprint(s.port))
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); !exited {
		t.Fatalf("server on a damaged WAL: %v, want it to exit with an error\n%s", err, out)
	}
	want := fmt.Sprintf("write-ahead log %s is damaged at offset %d", seg, mid.off)
	if !strings.Contains(string(out), want) {
		t.Fatalf("server output does not say %q:\n%s", want, out)
	}
	if strings.Contains(string(out), "goroutine ") || strings.Contains(string(out), "panic:") {
		t.Fatalf("server printed a Go panic trace:\n%s", out)
	}
	if got, _ := os.ReadFile(seg); len(got) != len(damaged) {
		t.Fatalf("the refused segment was changed: %d bytes, was %d", len(got), len(damaged))
	}

	// A torn last record instead: the server starts and keeps every write
	// acknowledged before it.
	last := records[len(records)-1]
	if err := os.WriteFile(seg, pristine[:last.off+last.size/2], 0o600); err != nil {
		t.Fatal(err)
	}
	torn := map[string]bool{}
	for _, k := range last.keys {
		torn[k] = true
	}
	s.start()
	for i := range n {
		name := fmt.Sprintf("cm-%02d", i)
		if torn["/registry/core/configmaps/default/"+name] {
			continue // its write was the one torn
		}
		if got := s.jsonpath("configmap/"+name, "{.data.k}"); got != fmt.Sprintf("value-%02d", i) {
			t.Fatalf("acknowledged configmap %s after the torn tail: %q", name, got)
		}
	}
	if !strings.Contains(s.log.String(), "write-ahead log ends with a torn record") {
		t.Fatalf("the dropped tail was not logged:\n%s", s.log.String())
	}
}
