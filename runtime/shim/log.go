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
	mu  sync.Mutex
	F   *os.File
	Now func() time.Time
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
	b := l.Now().UTC().AppendFormat(l.entry[:0], time.RFC3339Nano)
	b = append(b, ' ')
	b = append(b, stream...)
	b = append(b, tag...)
	b = append(b, content...)
	b = append(b, '\n')
	_, _ = l.F.Write(b)
	l.entry = b
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
