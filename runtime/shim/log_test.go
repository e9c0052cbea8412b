package shim

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A log file opened at the first entry (LogFile.Open) is opened once, only
// when there is output; when it cannot be opened the output is dropped.
func TestLogFileOpenedAtFirstEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.0.log")
	if err := createLog(path); err != nil {
		t.Fatal(err)
	}
	opens := 0
	open := openLog(path)
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	lf := &LogFile{Now: now, Open: func() (*os.File, error) { opens++; return open() }}
	lf.CopyLines("stdout", bufio.NewReader(strings.NewReader("")))
	if opens != 0 {
		t.Fatalf("no output: opened %d times", opens)
	}
	lf.CopyLines("stdout", bufio.NewReader(strings.NewReader("a\nb\n")))
	lf.CopyLines("stderr", bufio.NewReader(strings.NewReader("c")))
	if err := lf.Close(); err != nil {
		t.Fatal(err)
	}
	lf.CopyLines("stdout", bufio.NewReader(strings.NewReader("after close\n")))
	if opens != 1 {
		t.Fatalf("opened %d times; want once", opens)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "2026-01-02T03:04:05Z stdout F a\n2026-01-02T03:04:05Z stdout F b\n2026-01-02T03:04:05Z stderr P c\n"
	if string(b) != want {
		t.Fatalf("log %q; want %q", b, want)
	}

	opens = 0
	lf = &LogFile{Now: now, Open: func() (*os.File, error) { opens++; return nil, errors.New("gone") }}
	lf.CopyLines("stdout", bufio.NewReader(strings.NewReader("a\nb\n")))
	if opens != 1 {
		t.Fatalf("failing open tried %d times; want once", opens)
	}
}

// The log file is never created by the output copy: once the pod's
// directory is gone, output goes nowhere.
func TestOpenLogDoesNotCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.0.log")
	if f, err := openLog(path)(); err == nil {
		f.Close()
		t.Fatal("openLog created the log file")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("stat: %v", err)
	}
}
