// Package indexgrid computes the state of every index of an Indexed Job (or
// every child Job of a JobSet) from its pods and its status' interval text,
// the pure logic both the terminal live view (cli/runview) and the web
// dashboard draw their index grids from.
package indexgrid

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// State is how far one index got.
type State int

// States of an index, in the order the grids colour them.
const (
	Pending State = iota
	Running
	Succeeded
	Failed
)

func (s State) String() string {
	return [...]string{"pending", "running", "succeeded", "failed"}[s]
}

// Cell is one index.
type Cell struct {
	State State
	// Restarts counts failed pods of the index and container restarts.
	Restarts int32
	// Pod is the index's latest pod.
	Pod string
}

// Pod is what the grid needs of one pod.
type Pod struct {
	Name string
	// Index is the pod's completion index; -1 when it has none.
	Index    int
	Phase    corev1.PodPhase
	Restarts int32
	// Deleted: the pod is gone or going (replaced, or removed with its
	// JobSet's restart).
	Deleted bool
}

// PhaseState is the state a pod phase gives its index.
func PhaseState(p corev1.PodPhase) State {
	switch p {
	case corev1.PodRunning:
		return Running
	case corev1.PodSucceeded:
		return Succeeded
	case corev1.PodFailed:
		return Failed
	}
	return Pending
}

// Cells gives each of n indexes the state of its latest pod (pods sorted by
// index, then creation); a failed pod before it counts as a restart. An
// index stays running while any of its pods runs (a JobSet's child Job).
func Cells(n int, pods []Pod) []Cell {
	cells := make([]Cell, max(n, 0))
	for _, p := range pods {
		if p.Index < 0 || p.Index >= len(cells) {
			continue
		}
		c := &cells[p.Index]
		if c.Pod != "" && c.State == Failed {
			c.Restarts++
		}
		c.Restarts += p.Restarts
		st := PhaseState(p.Phase)
		if p.Deleted && st != Succeeded && st != Failed {
			continue
		}
		if c.State == Running && st != Running {
			continue
		}
		c.State, c.Pod = st, p.Name
	}
	return cells
}

// Mark sets the cells of upstream's interval text ("0,3-7") to state.
func Mark(cells []Cell, intervals string, state State) {
	for _, r := range ParseIntervals(intervals) {
		for i := max(r[0], 0); i <= r[1] && i < len(cells); i++ {
			cells[i].State = state
		}
	}
}

// ParseIntervals reads upstream's interval text ("0,3-7") as [lo, hi]
// pairs, skipping what does not parse.
func ParseIntervals(text string) [][2]int {
	var out [][2]int
	for _, part := range strings.Split(text, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		out = append(out, [2]int{a, b})
	}
	return out
}

// Intervals renders the indexes of cells in state as upstream's interval
// text, e.g. "0,3-7".
func Intervals(cells []Cell, state State) string {
	var parts []string
	for i := 0; i < len(cells); {
		if cells[i].State != state {
			i++
			continue
		}
		j := i
		for j+1 < len(cells) && cells[j+1].State == state {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(i))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", i, j))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
