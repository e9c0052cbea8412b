package shim

import (
	"bufio"
	"errors"
	"os"
	"sync"
	"time"
)

// Container logs are stored in the CRI log format, one line per entry:
// "<RFC3339Nano time> <stdout|stderr> <F|P> <content>".

// MaxLogLine is the longest log entry; longer lines are split (P entries).
const MaxLogLine = 16 * 1024

// LogFile serialises writes of stdout and stderr to one attempt's log file.
type LogFile struct {
	mu sync.Mutex
	F  *os.File
	// Open, when F is nil, opens the file at the first entry; entries are
	// dropped when it fails.
	Open func() (*os.File, error)
	// dropping: Open failed or the file was closed.
	dropping bool
	Now      func() time.Time
	// Tee, when set, also receives each chunk as the container wrote it.
	Tee func(stream string, p []byte)
	// entry is the scratch space of writeEntry, guarded by mu.
	entry []byte
}

func (l *LogFile) writeEntry(stream string, full bool, content []byte) {
	tag := " F "
	if !full {
		tag = " P "
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.F == nil && !l.open() {
		return
	}
	b := l.Now().UTC().AppendFormat(l.entry[:0], time.RFC3339Nano)
	b = append(b, ' ')
	b = append(b, stream...)
	b = append(b, tag...)
	b = append(b, content...)
	b = append(b, '\n')
	_, _ = l.F.Write(b)
	l.entry = b
}

// open opens the file with Open, once; it reports whether it is open.
func (l *LogFile) open() bool {
	if l.dropping || l.Open == nil {
		return false
	}
	f, err := l.Open()
	if err != nil {
		l.dropping = true
		return false
	}
	l.F = f
	return true
}

// Close closes the file if it was opened; later entries are dropped.
func (l *LogFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropping = true
	if l.F == nil {
		return nil
	}
	err := l.F.Close()
	l.F = nil
	return err
}

// CopyLines writes the lines of br as entries until EOF.
func (l *LogFile) CopyLines(stream string, br *bufio.Reader) {
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if l.Tee != nil {
				l.Tee(stream, line)
			}
			full := line[len(line)-1] == '\n'
			if full {
				line = line[:len(line)-1]
			}
			l.writeEntry(stream, full, line)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}
