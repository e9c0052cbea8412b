package runview

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Palette colours the parts of the view; the zero Palette leaves text as is
// (plain rendering, golden tests).
type Palette struct {
	Cell [4]func(string) string // by CellState
	Dim  func(string) string
	Bad  func(string) string
}

func paint(f func(string) string, s string) string {
	if f == nil {
		return s
	}
	return f(s)
}

// Glyphs of the index grid by CellState: readable without colour.
var glyphs = [4]byte{'.', '>', '#', 'x'}

// Layout bounds the view.
type Layout struct {
	Width int
	// GridRows is the most rows an item's index grid takes; beyond them
	// one cell stands for a range of indexes.
	GridRows int
	// FailingShown is how many failing indexes show their last lines.
	FailingShown int
}

// Render draws every item: a progress bar with counts, rate and ETA, the
// active/failed/restart counters, the index grid and the last log lines of
// the latest failing indexes.
func (m *Model) Render(l Layout, p Palette) string {
	if l.Width < 20 {
		l.Width = 20
	}
	l.GridRows = max(l.GridRows, 1)
	var b strings.Builder
	for _, it := range m.items {
		b.WriteString(m.progressLine(it, l.Width, p))
		b.WriteByte('\n')
		b.WriteString(m.countersLine(it, p))
		b.WriteByte('\n')
		rows := GridRows(it.Cells, l.Width-2, l.GridRows)
		for _, row := range rows {
			b.WriteString("  " + paintRow(row, p) + "\n")
		}
		if len(rows) > 0 && rows[0].Span > 1 {
			b.WriteString(paint(p.Dim, fmt.Sprintf("  (one cell: %d indexes)", rows[0].Span)) + "\n")
		}
		b.WriteString(m.failingLines(it, l, p))
	}
	return b.String()
}

// progressLine renders "job/x [#####.....] 10/20 2.0/s ETA 5s" sized to
// width.
func (m *Model) progressLine(it ItemView, width int, p Palette) string {
	count := fmt.Sprintf("%d/%d", it.Done, it.Total)
	if it.Total < 0 {
		count = fmt.Sprintf("%d done", it.Done)
	}
	tail := " " + count
	if rate, eta, ok := m.Rate(it); ok {
		tail += fmt.Sprintf("  %.1f/s", rate)
		if it.Outcome == "" && eta > 0 {
			tail += "  ETA " + formatDuration(eta)
		}
	}
	switch {
	case it.Word == "Failed" || it.Word == "Deleted":
		tail += "  " + paint(p.Bad, it.Word)
	case it.Word != "":
		tail += "  " + it.Word
	}
	barWidth := width - utf8.RuneCountInString(it.Ref) - visibleLen(tail) - 3
	barWidth = min(max(barWidth, 10), 40)
	return it.Ref + " " + bar(it.Done, it.Total, barWidth) + tail
}

// bar renders "[####......]" with width cells inside the brackets.
func bar(done, total int64, width int) string {
	filled := 0
	if total > 0 {
		filled = int(min(done, total) * int64(width) / total)
	}
	return "[" + strings.Repeat("=", filled) + strings.Repeat(" ", width-filled) + "]"
}

func (m *Model) countersLine(it ItemView, p Palette) string {
	unit := ""
	if strings.HasPrefix(it.Ref, "jobset/") {
		unit = " jobs" // a JobSet's counters count child Jobs
	}
	s := fmt.Sprintf("  active %d%s, failed %d", it.Counts.Active, unit, it.Counts.Failed)
	if it.Restarts > 0 {
		s += fmt.Sprintf(", restarts %d", it.Restarts)
	}
	if b, ok := m.base[it.Ref]; ok {
		s += ", elapsed " + formatDuration(m.now.Sub(b.at))
	}
	return paint(p.Dim, s)
}

// failingLines shows, for the latest failing indexes, their pod's last log
// lines, each cut to the width.
func (m *Model) failingLines(it ItemView, l Layout, p Palette) string {
	idx := failing(it)
	if len(idx) > l.FailingShown {
		idx = idx[len(idx)-l.FailingShown:]
	}
	var b strings.Builder
	for _, i := range idx {
		c := it.Cells[i]
		head := fmt.Sprintf("  index %d %s", i, c.State)
		if c.Restarts > 0 {
			head += fmt.Sprintf(" (%d restarts)", c.Restarts)
		}
		b.WriteString(paint(p.Bad, cut(head+" "+c.Pod, l.Width)) + "\n")
		for _, line := range m.tails[c.Pod] {
			b.WriteString(cut("    | "+line, l.Width) + "\n")
		}
	}
	return b.String()
}

// GridRow is one row of the index grid: the first index it shows and one
// state per cell.
type GridRow struct {
	First int
	// Span is how many indexes each cell stands for.
	Span  int
	Cells []CellState
	Label string
}

// GridRows lays cells out in rows that fit width, at most maxRows of them.
// When they do not fit, each cell stands for a range of consecutive
// indexes and shows the most telling state among them (failed, running,
// pending, then succeeded), and each row is labelled with its first index.
func GridRows(cells []Cell, width, maxRows int) []GridRow {
	n := len(cells)
	if n == 0 {
		return nil
	}
	labelWidth := 0
	cols := max(width, 1)
	if n > cols {
		labelWidth = len(fmt.Sprint(n-1)) + 1
		cols = max(width-labelWidth, 1)
	}
	span := 1
	for (n+span-1)/span > cols*maxRows {
		span++
	}
	states := make([]CellState, 0, (n+span-1)/span)
	for lo := 0; lo < n; lo += span {
		states = append(states, telling(cells[lo:min(lo+span, n)]))
	}
	var rows []GridRow
	for lo := 0; lo < len(states); lo += cols {
		row := GridRow{First: lo * span, Span: span, Cells: states[lo:min(lo+cols, len(states))]}
		if labelWidth > 0 {
			row.Label = fmt.Sprintf("%-*d", labelWidth, row.First)
		}
		rows = append(rows, row)
	}
	return rows
}

// telling picks the state a collapsed cell shows.
func telling(cells []Cell) CellState {
	best := Succeeded
	rank := map[CellState]int{Succeeded: 0, Pending: 1, Running: 2, Failed: 3}
	for _, c := range cells {
		if rank[c.State] > rank[best] {
			best = c.State
		}
	}
	return best
}

func paintRow(r GridRow, p Palette) string {
	var b strings.Builder
	b.WriteString(r.Label)
	for i := 0; i < len(r.Cells); {
		j := i
		for j < len(r.Cells) && r.Cells[j] == r.Cells[i] {
			j++
		}
		b.WriteString(paint(p.Cell[r.Cells[i]], strings.Repeat(string(glyphs[r.Cells[i]]), j-i)))
		i = j
	}
	return b.String()
}

func cut(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:max(width-1, 0)]) + "~"
}

// visibleLen counts runes outside ANSI escape sequences.
func visibleLen(s string) int {
	n, esc := 0, false
	for _, r := range s {
		switch {
		case r == '\x1b':
			esc = true
		case esc:
			if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
				esc = false
			}
		default:
			n++
		}
	}
	return n
}

// formatDuration renders whole seconds ("7s", "2m5s").
func formatDuration(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	return d.Round(time.Second).String()
}
