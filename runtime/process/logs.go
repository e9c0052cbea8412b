package process

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/shim"
)

// Container logs are stored in the CRI log format (shim.LogFile).

const maxLogLine = shim.MaxLogLine

// copyStream turns r into log entries of l until EOF. Its line buffer
// comes from the runtime's pool: most containers write little or nothing,
// and a fresh 16 KiB per stream and attempt would be most of what starting
// one allocates.
func (r *Runtime) copyStream(l *shim.LogFile, stream string, src io.Reader) {
	br, _ := r.lineReaders.Get().(*bufio.Reader)
	if br == nil {
		br = bufio.NewReaderSize(src, maxLogLine)
	} else {
		br.Reset(src)
	}
	defer func() {
		br.Reset(nil)
		r.lineReaders.Put(br)
	}()
	l.CopyLines(stream, br)
}

// logEntry is one parsed line of a log file.
type logEntry struct {
	ts      time.Time
	stamp   []byte
	full    bool
	content []byte
}

func parseEntry(line []byte) (logEntry, bool) {
	parts := bytes.SplitN(line, []byte(" "), 4)
	if len(parts) < 3 {
		return logEntry{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, string(parts[0]))
	if err != nil {
		return logEntry{}, false
	}
	e := logEntry{ts: ts, stamp: parts[0], full: string(parts[2]) == "F"}
	if len(parts) == 4 {
		e.content = parts[3]
	}
	return e, true
}

// logWriter applies limitBytes and timestamps on the way out.
type logWriter struct {
	w          io.Writer
	timestamps bool
	remaining  int64 // <0: unlimited
	startLine  bool
}

var errLimit = errors.New("limit reached")

func (lw *logWriter) write(e logEntry) error {
	var b []byte
	if lw.timestamps && lw.startLine {
		b = append(b, e.stamp...)
		b = append(b, ' ')
	}
	b = append(b, e.content...)
	if e.full {
		b = append(b, '\n')
	}
	lw.startLine = e.full
	if lw.remaining >= 0 && int64(len(b)) >= lw.remaining {
		_, _ = lw.w.Write(b[:lw.remaining])
		return errLimit
	}
	if lw.remaining >= 0 {
		lw.remaining -= int64(len(b))
	}
	_, err := lw.w.Write(b)
	return err
}

// readLog writes the entries of path that opts select; with follow it keeps
// reading until finished reports true and the file is drained.
func readLog(ctx context.Context, path string, opts runtime.LogOptions, finished func() bool, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	if !opts.Follow {
		// Most containers of a batch write nothing: their results' log
		// tails need no reader.
		if st, err := f.Stat(); err == nil && st.Size() == 0 {
			return nil
		}
	}
	lw := &logWriter{w: w, timestamps: opts.Timestamps, remaining: -1, startLine: true}
	if opts.LimitBytes != nil {
		lw.remaining = *opts.LimitBytes
	}
	r := bufio.NewReader(f)
	if opts.TailLines != nil {
		if err := seekTail(f, r, *opts.TailLines); err != nil {
			return err
		}
	}
	var pending []byte
	for {
		chunk, err := r.ReadBytes('\n')
		pending = append(pending, chunk...)
		if err == nil {
			line := pending[:len(pending)-1]
			pending = nil
			if e, ok := parseEntry(line); ok && (opts.SinceTime == nil || !e.ts.Before(*opts.SinceTime)) {
				if werr := lw.write(e); werr != nil {
					if errors.Is(werr, errLimit) {
						return nil
					}
					return werr
				}
				flush(w)
			}
			continue
		}
		if !errors.Is(err, io.EOF) {
			return fmt.Errorf("read log: %w", err)
		}
		if !opts.Follow {
			return nil
		}
		if finished() && len(pending) == 0 {
			// One more read: the process may have written before it ended.
			if extra, _ := r.Peek(1); len(extra) == 0 {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func flush(w io.Writer) {
	if f, ok := w.(interface{ Flush() }); ok {
		f.Flush()
	}
}

// seekTail positions r at the start of the last n complete lines of f.
func seekTail(f *os.File, r *bufio.Reader, n int64) error {
	if n < 0 {
		return nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("read log: %w", err)
	}
	pos := len(data)
	if pos > 0 && data[pos-1] == '\n' {
		pos--
	}
	start := 0
	found := true
	for i := int64(0); i < n; i++ {
		j := bytes.LastIndexByte(data[:pos], '\n')
		if j < 0 {
			found = false
			break
		}
		pos = j
	}
	if found {
		start = min(pos+1, len(data))
	}
	if _, err := f.Seek(int64(start), io.SeekStart); err != nil {
		return fmt.Errorf("seek log: %w", err)
	}
	r.Reset(f)
	return nil
}

// lastLines returns at most the last n lines / max bytes of the log's
// content, for terminationMessagePolicy FallbackToLogsOnError.
func lastLines(path string, n int, max int) string {
	var buf bytes.Buffer
	tail := int64(n)
	_ = readLog(context.Background(), path, runtime.LogOptions{TailLines: &tail}, func() bool { return true }, &buf)
	b := buf.Bytes()
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
