package runner

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress shows how the followed objects are doing: a redrawn line on a
// terminal, or a plain line whenever the counters change otherwise.
type progress struct {
	out      io.Writer
	terminal bool
	now      func() time.Time
	start    time.Time
	last     string
	drawn    bool
}

func newProgress(out io.Writer, terminal bool, now func() time.Time) *progress {
	return &progress{out: out, terminal: terminal, now: now, start: now()}
}

func (p *progress) draw(items []ItemResult) {
	line := progressLine(items)
	if line == p.last && !p.terminal {
		return
	}
	p.last = line
	if p.terminal {
		elapsed := p.now().Sub(p.start).Round(100 * time.Millisecond)
		fmt.Fprintf(p.out, "\r\033[K%s  %s", line, elapsed)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.out, line)
}

func (p *progress) clear() {
	if p.terminal && p.drawn {
		fmt.Fprint(p.out, "\r\033[K")
	}
}

// progressLine renders e.g. "job/pi: 1 active, 0/1 succeeded, 0 failed".
func progressLine(items []ItemResult) string {
	parts := make([]string, 0, len(items))
	for _, it := range items {
		total := "?"
		if it.Counts.Completions >= 0 {
			total = fmt.Sprint(it.Counts.Completions)
		}
		unit := ""
		if it.Kind == JobSetGVK.Kind {
			unit = " jobs" // a JobSet's counters count child Jobs
		}
		s := fmt.Sprintf("%s/%s: %d active, %d/%s%s succeeded, %d failed", strings.ToLower(it.Kind), it.Name, it.Counts.Active, it.Counts.Succeeded, total, unit, it.Counts.Failed)
		if it.Restarts > 0 {
			s += fmt.Sprintf(", %d restarts", it.Restarts)
		}
		if it.Outcome != OutcomeRunning {
			s += " — " + outcomeWord(it)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
