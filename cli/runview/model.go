// Package runview turns what `batchlet run` and `batchlet watch` follow (the
// runner's snapshots of Jobs, JobSets and their pods, and pod log lines)
// into a live view: a pure model with its text rendering, a bubbletea
// program showing it on a terminal, and a JSON-lines reporter.
package runview

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/batchlet/batchlet/cli/runner"
	"github.com/batchlet/batchlet/indexgrid"
)

// CellState is how far one index (or completion) of a followed object got.
type CellState = indexgrid.State

// States of a cell.
const (
	Pending   = indexgrid.Pending
	Running   = indexgrid.Running
	Succeeded = indexgrid.Succeeded
	Failed    = indexgrid.Failed
)

// Cell is one index of a followed object; Pod is the index's latest pod,
// whose log tail a failing index shows.
type Cell = indexgrid.Cell

// ItemView is one followed object as the view shows it.
type ItemView struct {
	Ref     string // "job/pi"
	Outcome runner.Outcome
	Word    string // "Complete", "Failed", "" while running
	Counts  runner.Counts
	// Done and Total drive the progress bar; Total < 0 when unknown (a
	// work-queue Job).
	Done, Total int64
	Restarts    int64
	Cells       []Cell
}

// baseline is where an item's rate is measured from: its first sight.
type baseline struct {
	at   time.Time
	done int64
}

// tailLines is how many last lines of each pod the view keeps.
const tailLines = 3

// Model is the pure state of the live view. Time only enters through
// snapshots and Tick, so rate and ETA are deterministic in tests.
type Model struct {
	items []ItemView
	base  map[string]baseline
	now   time.Time
	tails map[string][]string // pod -> last lines
}

// NewModel returns an empty view.
func NewModel() *Model {
	return &Model{base: map[string]baseline{}, tails: map[string][]string{}}
}

// Apply takes a new snapshot of the followed objects.
func (m *Model) Apply(s runner.Snapshot) {
	m.items = Items(s)
	if s.Time.After(m.now) {
		m.now = s.Time
	}
	for _, it := range m.items {
		if _, ok := m.base[it.Ref]; !ok {
			m.base[it.Ref] = baseline{at: s.Time, done: it.Done}
		}
	}
}

// Tick moves the view's clock (elapsed time, rate, ETA).
func (m *Model) Tick(now time.Time) {
	if now.After(m.now) {
		m.now = now
	}
}

// AddLog keeps the last lines of every pod for failing indexes.
func (m *Model) AddLog(l runner.LogLine) {
	t := append(m.tails[l.Pod], l.Text)
	if len(t) > tailLines {
		t = t[len(t)-tailLines:]
	}
	m.tails[l.Pod] = t
}

// Finished reports whether every followed object has finished.
func (m *Model) Finished() bool {
	for _, it := range m.items {
		if it.Outcome == runner.OutcomeRunning {
			return false
		}
	}
	return len(m.items) > 0
}

// Rate is how many indexes of an item finished per second since the view
// first saw it, and the estimated time left; ok is false until one did.
func (m *Model) Rate(it ItemView) (perSecond float64, eta time.Duration, ok bool) {
	b, seen := m.base[it.Ref]
	elapsed := m.now.Sub(b.at)
	if !seen || elapsed <= 0 || it.Done <= b.done {
		return 0, 0, false
	}
	perSecond = float64(it.Done-b.done) / elapsed.Seconds()
	if it.Total >= 0 && it.Done < it.Total {
		eta = time.Duration(float64(it.Total-it.Done) / perSecond * float64(time.Second))
	}
	return perSecond, eta, true
}

// Items computes the view of every item of a snapshot.
func Items(s runner.Snapshot) []ItemView {
	byItem := make([][]runner.PodState, len(s.Items))
	for _, p := range s.Pods {
		if p.Item >= 0 && p.Item < len(s.Items) {
			byItem[p.Item] = append(byItem[p.Item], p)
		}
	}
	out := make([]ItemView, 0, len(s.Items))
	for i, it := range s.Items {
		out = append(out, itemView(it, byItem[i]))
	}
	return out
}

func itemView(it runner.ItemResult, pods []runner.PodState) ItemView {
	v := ItemView{
		Ref: strings.ToLower(it.Kind) + "/" + it.Name, Outcome: it.Outcome, Counts: it.Counts,
		Done: it.Counts.Succeeded, Total: it.Counts.Completions, Restarts: it.Restarts,
	}
	if it.Outcome != runner.OutcomeRunning {
		v.Word = outcomeWord(it)
	}
	switch {
	case it.Kind == runner.PodGVK.Kind:
		v.Cells = []Cell{podCell(it, pods)}
	case it.Kind == runner.JobSetGVK.Kind || it.Indexed:
		v.Cells = indexedCells(int(it.Counts.Completions), pods)
		if it.Kind == runner.JobSetGVK.Kind && it.Outcome == runner.OutcomeComplete {
			for i := range v.Cells {
				v.Cells[i].State = Succeeded
			}
		}
		mark(v.Cells, it.CompletedIndexes, Succeeded)
		mark(v.Cells, it.FailedIndexes, Failed)
	default:
		v.Cells = countedCells(it, pods)
	}
	if it.Kind == runner.JobGVK.Kind {
		// A Job's restarts are its pods' failures and container restarts;
		// a JobSet's its own status.restarts.
		v.Restarts = 0
		for _, c := range v.Cells {
			v.Restarts += int64(c.Restarts)
		}
	}
	return v
}

// outcomeWord names an outcome as the kind's condition does.
func outcomeWord(it runner.ItemResult) string {
	switch {
	case it.Outcome == runner.OutcomeComplete && it.Kind == runner.PodGVK.Kind:
		return string(corev1.PodSucceeded)
	case it.Outcome == runner.OutcomeComplete && it.Kind == runner.JobSetGVK.Kind:
		return "Completed"
	}
	return string(it.Outcome)
}

func podCell(it runner.ItemResult, pods []runner.PodState) Cell {
	c := Cell{}
	for _, p := range pods {
		c = Cell{State: phaseState(p.Phase), Restarts: p.Restarts, Pod: p.Name}
	}
	switch it.Outcome {
	case runner.OutcomeComplete:
		c.State = Succeeded
	case runner.OutcomeFailed, runner.OutcomeDeleted:
		c.State = Failed
	}
	return c
}

func phaseState(p corev1.PodPhase) CellState { return indexgrid.PhaseState(p) }

// indexedCells gives each index the state of its latest pod (see
// indexgrid.Cells).
func indexedCells(n int, pods []runner.PodState) []Cell {
	gp := make([]indexgrid.Pod, len(pods))
	for i, p := range pods {
		gp[i] = indexgrid.Pod{Name: p.Name, Index: p.Index, Phase: p.Phase, Restarts: p.Restarts, Deleted: p.Deleted}
	}
	return indexgrid.Cells(n, gp)
}

// countedCells fills a NonIndexed Job's completions from its counters:
// succeeded first, then active; a work-queue Job shows its pods.
func countedCells(it runner.ItemResult, pods []runner.PodState) []Cell {
	if it.Counts.Completions < 0 {
		cells := make([]Cell, 0, len(pods))
		for _, p := range pods {
			if !p.Deleted {
				cells = append(cells, Cell{State: phaseState(p.Phase), Restarts: p.Restarts, Pod: p.Name})
			}
		}
		return cells
	}
	cells := make([]Cell, it.Counts.Completions)
	for i := range cells {
		switch {
		case int64(i) < it.Counts.Succeeded:
			cells[i].State = Succeeded
		case int64(i) < it.Counts.Succeeded+it.Counts.Active:
			cells[i].State = Running
		}
	}
	return cells
}

// mark sets the cells of upstream's interval text ("0,3-7") to state.
func mark(cells []Cell, intervals string, state CellState) { indexgrid.Mark(cells, intervals, state) }

// ParseIntervals reads upstream's interval text ("0,3-7") as [lo, hi] pairs.
func ParseIntervals(text string) [][2]int { return indexgrid.ParseIntervals(text) }

// Intervals renders the indexes of cells in state as upstream's interval
// text, e.g. "0,3-7".
func Intervals(cells []Cell, state CellState) string { return indexgrid.Intervals(cells, state) }

// failing lists the indexes of an item that failed or restarted and have a
// pod, most recent last.
func failing(it ItemView) []int {
	var idx []int
	for i, c := range it.Cells {
		if c.Pod != "" && (c.State == Failed || c.Restarts > 0) {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	return idx
}
