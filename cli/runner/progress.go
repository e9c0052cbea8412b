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
		fmt.Fprintf(p.out, "\r\033[K%s%s  %s", line, indexGrids(items), elapsed)
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

// maxGridIndexes is the largest Indexed Job whose indexes fit on the
// progress line.
const maxGridIndexes = 64

// indexGrids renders " [##x..]" per small Indexed Job: '#' completed,
// 'x' failed, '.' not yet done.
func indexGrids(items []ItemResult) string {
	var b strings.Builder
	for _, it := range items {
		if it.Kind != JobGVK.Kind || it.Counts.Completions <= 0 || it.Counts.Completions > maxGridIndexes ||
			(it.CompletedIndexes == "" && it.FailedIndexes == "" && !it.Indexed) {
			continue
		}
		done, failed := parseIndexes(it.CompletedIndexes), parseIndexes(it.FailedIndexes)
		b.WriteString(" [")
		for i := 0; i < int(it.Counts.Completions); i++ {
			switch {
			case done[i]:
				b.WriteByte('#')
			case failed[i]:
				b.WriteByte('x')
			default:
				b.WriteByte('.')
			}
		}
		b.WriteByte(']')
	}
	return b.String()
}

// parseIndexes reads upstream's interval text ("0,3-7") into a set.
func parseIndexes(text string) map[int]bool {
	set := map[int]bool{}
	for _, part := range strings.Split(text, ",") {
		if part == "" {
			continue
		}
		var lo, hi int
		if n, _ := fmt.Sscanf(part, "%d-%d", &lo, &hi); n == 2 {
			for i := lo; i <= hi && i-lo <= maxGridIndexes; i++ {
				set[i] = true
			}
		} else if n, _ := fmt.Sscanf(part, "%d", &lo); n == 1 {
			set[lo] = true
		}
	}
	return set
}
