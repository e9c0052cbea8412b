package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchlet/batchlet/storage"
)

// closedStore writes n keys, checkpoints them into bbolt and closes the
// store cleanly (no WAL left).
func closedStore(t *testing.T, n int) (string, map[string]string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	b, err := Open(path, Options{CompactInterval: -1, NoSync: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]string{}
	for i := range n {
		key := fmt.Sprintf("/k/%03d", i)
		if _, err := b.Create(context.Background(), key, []byte(testValue(i))); err != nil {
			t.Fatal(err)
		}
		values[key] = testValue(i)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return path, values
}

// openAndReadAll opens the store and reads every key back. It returns the
// open error, or the first read error, or an error for a changed value.
func openAndReadAll(path string, opts Options, values map[string]string) error {
	opts.CompactInterval, opts.NoSync, opts.Logger = -1, true, quietLogger()
	b, err := Open(path, opts)
	if err != nil {
		return err
	}
	defer b.Close()
	for k, v := range values {
		kv, err := b.Get(context.Background(), k)
		if err != nil {
			return err
		}
		if string(kv.Value) != v {
			return fmt.Errorf("%s served changed: %q", k, kv.Value)
		}
	}
	_, err = b.List(context.Background(), "/k/", storage.ListOptions{})
	return err
}

func wantDamaged(t *testing.T, err error, path, reason string) {
	t.Helper()
	var dmg *DamagedError
	if !errors.As(err, &dmg) || dmg.File != path || !strings.Contains(err.Error(), reason) {
		t.Fatalf("got %v, want a DamagedError naming %s with %q", err, path, reason)
	}
}

func TestStoreFileMissingOrShort(t *testing.T) {
	path, values := closedStore(t, 200)
	m, err := readMeta(path)
	if err != nil {
		t.Fatal(err)
	}
	used := int64(m.pgid) * int64(m.pageSize) // bbolt grows the file ahead of use
	for _, size := range []int64{used / 2, used - 4096, 3 * 4096} {
		t.Run(fmt.Sprintf("truncated to %d", size), func(t *testing.T) {
			p := copyStore(t, path)
			if err := os.Truncate(p, size); err != nil {
				t.Fatal(err)
			}
			wantDamaged(t, openAndReadAll(p, Options{}, values), p, "it was truncated")
		})
	}
	t.Run("empty, existing cluster", func(t *testing.T) {
		p := copyStore(t, path)
		if err := os.Truncate(p, 0); err != nil {
			t.Fatal(err)
		}
		wantDamaged(t, openAndReadAll(p, Options{MustExist: true}, nil), p, "the file is empty but the data dir belongs to an existing cluster")
	})
	t.Run("missing, existing cluster", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "state.db")
		wantDamaged(t, openAndReadAll(p, Options{MustExist: true}, nil), p, "the file is missing")
	})
	t.Run("missing, WAL present", func(t *testing.T) {
		cs := writeAndCrash(t, 3, 1<<20)
		if err := os.Remove(cs.path); err != nil {
			t.Fatal(err)
		}
		wantDamaged(t, openAndReadAll(cs.path, Options{}, nil), cs.path, "but its write-ahead log "+cs.segs[0]+" holds writes")
	})
	t.Run("both meta pages damaged", func(t *testing.T) {
		p := copyStore(t, path)
		mutate(t, p, func(d []byte) []byte { d[16+20] ^= 0xFF; d[4096+16+20] ^= 0xFF; return d })
		wantDamaged(t, openAndReadAll(p, Options{}, values), p, "neither meta page is valid")
	})
	t.Run("older meta page damaged", func(t *testing.T) {
		p := copyStore(t, path)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		m0, _ := readMetaAt(f, 0)
		m1, _ := readMetaAt(f, 4096)
		f.Close()
		older := 0
		if m1.txid < m0.txid {
			older = 4096
		}
		mutate(t, p, func(d []byte) []byte { d[older+16+20] ^= 0xFF; return d })
		if err := openAndReadAll(p, Options{}, values); err != nil {
			t.Fatalf("bbolt keeps two meta pages for this: %v", err)
		}
	})
}

func copyStore(t *testing.T, path string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "state.db")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStoreFilePageDamage changes one byte at several places of every page
// and reopens: each ends with a DamagedError naming the file or with every
// value read back unchanged (the byte was in a free page), never a panic.
func TestStoreFilePageDamage(t *testing.T) {
	path, values := closedStore(t, 100)
	pristine, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := readMeta(path)
	if err != nil {
		t.Fatal(err)
	}
	const pageSize = 4096
	pristine = pristine[:m.pgid*pageSize] // bbolt grows the file ahead of use
	// Page header (id, flags, count, overflow), element headers, data.
	offsets := []int{0, 8, 10, 12, 16, 20, 24, 40, 1000, 3000}
	refused := 0
	p := filepath.Join(t.TempDir(), "state.db")
	for page := 2; page*pageSize < len(pristine); page++ {
		for _, off := range offsets {
			for _, mask := range []byte{0x01, 0xFF} {
				for _, s := range []string{p, p + ".wal-00000001"} {
					_ = os.Remove(s)
				}
				data := bytes.Clone(pristine)
				data[page*pageSize+off] ^= mask
				if err := os.WriteFile(p, data, 0o600); err != nil {
					t.Fatal(err)
				}
				err := openAndReadAll(p, Options{}, values)
				if err == nil {
					continue
				}
				refused++
				var dmg *DamagedError
				if !errors.As(err, &dmg) || dmg.File != p {
					t.Fatalf("page %d offset %d xor %#x: %v, want a DamagedError naming %s", page, off, mask, err, p)
				}
			}
		}
	}
	if refused == 0 {
		t.Fatal("no damage was detected at all")
	}
}

func TestStoreValueByteChanged(t *testing.T) {
	path, values := closedStore(t, 50)
	needle := []byte(`"name":"p017"`)
	change := func(t *testing.T) string {
		p := copyStore(t, path)
		mutate(t, p, func(d []byte) []byte {
			// The kv bucket's copy; the log's copy comes later in the file
			// or earlier, either is a stored value.
			i := bytes.Index(d, needle)
			if i < 0 {
				t.Fatal("value not found in the file")
			}
			d[i+10] = '8' // p017 -> p018: well-formed, but not what was stored
			return d
		})
		return p
	}
	t.Run("found by the check at open", func(t *testing.T) {
		p := change(t)
		wantDamaged(t, openAndReadAll(p, Options{}, values), p, "fails its checksum")
	})
	t.Run("found when read", func(t *testing.T) {
		p := change(t)
		err := openAndReadAll(p, Options{VerifyBudget: -1}, values)
		if !errors.Is(err, ErrChecksum) {
			t.Fatalf("reading the changed value: %v, want ErrChecksum", err)
		}
	})
}

func TestLegacyRecordsStayReadable(t *testing.T) {
	// A store written before checksums: its unmarked records are read as
	// they are, up to the revision it had when checksums began.
	rec := append([]byte{}, 3, 3)
	rec = append(rec, "old"...)
	if kv, err := decodeKV("/k", rec, 5); err != nil || string(kv.Value) != "old" {
		t.Fatalf("legacy record: %+v, %v", kv, err)
	}
	if _, err := decodeKV("/k", rec, 2); !errors.Is(err, ErrChecksum) {
		t.Fatalf("unmarked record after checksums began: %v, want ErrChecksum", err)
	}
	sealed := encodeKV(nil, 3, 3, []byte("new"))
	if kv, err := decodeKV("/k", sealed, 0); err != nil || string(kv.Value) != "new" {
		t.Fatalf("sealed record: %+v, %v", kv, err)
	}
	ev := sampleEvents()[1]
	if got, _, err := decodeLogRecord(6, encodeLogEvent(nil, &ev, 0), 0); err != nil || string(got.KV.Value) != "v2" {
		t.Fatalf("sealed log record: %+v, %v", got, err)
	}
	if _, _, err := decodeLogRecord(6, encodeEvent(nil, &ev), 0); !errors.Is(err, ErrChecksum) {
		t.Fatalf("unmarked log record after checksums began: %v", err)
	}
}
