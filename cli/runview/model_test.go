package runview

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/batchlet/batchlet/cli/runner"
)

func states(s string) []Cell {
	byGlyph := map[rune]CellState{'.': Pending, '>': Running, '#': Succeeded, 'x': Failed}
	cells := make([]Cell, 0, len(s))
	for _, r := range s {
		cells = append(cells, Cell{State: byGlyph[r]})
	}
	return cells
}

func TestGridRows(t *testing.T) {
	exact := []struct {
		name        string
		cells       []Cell
		width, rows int
		want        []string
		wantSpan    int
	}{
		{"fits one row", states("##>x."), 10, 2, []string{"##>x."}, 1},
		{"wraps with labels", states("##########>>.."), 10, 3, []string{"0  #######", "7  ###>>.."}, 1},
		{"collapses into ranges, failed and running win", states("####x###..>>####"), 6, 1, []string{"0  x>#"}, 6},
		{"all succeeded collapses to succeeded", states(strings.Repeat("#", 100)), 12, 2, []string{"0  #########", "54 ########"}, 6},
		{"empty", nil, 10, 2, nil, 0},
	}
	for _, tc := range exact {
		t.Run(tc.name, func(t *testing.T) {
			rows := GridRows(tc.cells, tc.width, tc.rows)
			var got []string
			for _, r := range rows {
				got = append(got, paintRow(r, Palette{}))
				if r.Span != tc.wantSpan {
					t.Errorf("span = %d, want %d", r.Span, tc.wantSpan)
				}
				if w := len(r.Label) + len(r.Cells); w > tc.width {
					t.Errorf("row %q is wider than %d", got[len(got)-1], tc.width)
				}
			}
			if len(got) > tc.rows {
				t.Errorf("%d rows, at most %d", len(got), tc.rows)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("rows = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestIntervals(t *testing.T) {
	cells := states("##.#x##>")
	for state, want := range map[CellState]string{Succeeded: "0-1,3,5-6", Failed: "4", Pending: "2", Running: "7"} {
		if got := Intervals(cells, state); got != want {
			t.Errorf("Intervals(%s) = %q, want %q", state, got, want)
		}
	}
	if got := ParseIntervals("0,3-7,x,9"); len(got) != 3 || got[1] != [2]int{3, 7} {
		t.Errorf("ParseIntervals = %v", got)
	}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func indexedJob(completed, failed string, counts runner.Counts) runner.ItemResult {
	return runner.ItemResult{Kind: "Job", Namespace: "default", Name: "idx", Indexed: true, Counts: counts, CompletedIndexes: completed, FailedIndexes: failed}
}

func TestItemsFromPods(t *testing.T) {
	snap := runner.Snapshot{
		Time:  t0,
		Items: []runner.ItemResult{indexedJob("0", "", runner.Counts{Active: 2, Failed: 1, Succeeded: 1, Completions: 5})},
		Pods: []runner.PodState{
			{Item: 0, Name: "idx-0-a", Index: 0, Phase: corev1.PodSucceeded},
			{Item: 0, Name: "idx-1-a", Index: 1, Phase: corev1.PodFailed, Created: t0},
			{Item: 0, Name: "idx-1-b", Index: 1, Phase: corev1.PodRunning, Created: t0.Add(time.Second), Restarts: 1},
			{Item: 0, Name: "idx-2-a", Index: 2, Phase: corev1.PodRunning},
			{Item: 0, Name: "idx-3-a", Index: 3, Phase: corev1.PodFailed},
			{Item: 0, Name: "idx-4-a", Index: 4, Phase: corev1.PodPending, Deleted: true},
		},
	}
	items := Items(snap)
	if len(items) != 1 {
		t.Fatalf("items = %v", items)
	}
	it := items[0]
	var got strings.Builder
	for _, c := range it.Cells {
		got.WriteByte(glyphs[c.State])
	}
	if got.String() != "#>>x." {
		t.Errorf("cells = %q, want #>>x.", got.String())
	}
	if it.Cells[1].Restarts != 2 || it.Cells[1].Pod != "idx-1-b" {
		t.Errorf("index 1 = %+v, want 2 restarts (a failed pod, a container restart) on idx-1-b", it.Cells[1])
	}
	if it.Restarts != 2 || it.Done != 1 || it.Total != 5 {
		t.Errorf("item = %+v", it)
	}
	if f := failing(it); len(f) != 2 || f[0] != 1 || f[1] != 3 {
		t.Errorf("failing = %v, want [1 3]", f)
	}
}

func TestItemsOtherKinds(t *testing.T) {
	cases := []struct {
		name string
		item runner.ItemResult
		pods []runner.PodState
		want string
	}{
		{"NonIndexed from counters", runner.ItemResult{Kind: "Job", Name: "n", Counts: runner.Counts{Succeeded: 2, Active: 1, Completions: 5}}, nil, "##>.."},
		{"work queue from pods", runner.ItemResult{Kind: "Job", Name: "q", Counts: runner.Counts{Completions: -1}},
			[]runner.PodState{{Index: -1, Phase: corev1.PodSucceeded, Name: "a"}, {Index: -1, Phase: corev1.PodRunning, Name: "b"}}, "#>"},
		{"JobSet by child job index", runner.ItemResult{Kind: "JobSet", Name: "js", Counts: runner.Counts{Completions: 3}},
			[]runner.PodState{{Index: 0, Phase: corev1.PodRunning, Name: "a"}, {Index: 0, Phase: corev1.PodSucceeded, Name: "b"}, {Index: 2, Phase: corev1.PodSucceeded, Name: "c"}}, ">.#"},
		{"completed JobSet", runner.ItemResult{Kind: "JobSet", Name: "js", Outcome: runner.OutcomeComplete, Counts: runner.Counts{Completions: 2}}, nil, "##"},
		{"failed Pod", runner.ItemResult{Kind: "Pod", Name: "p", Outcome: runner.OutcomeFailed}, []runner.PodState{{Index: -1, Phase: corev1.PodFailed, Name: "p"}}, "x"},
		{"failed indexes win", indexedJob("0", "1-2", runner.Counts{Completions: 4}), nil, "#xx."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it := Items(runner.Snapshot{Items: []runner.ItemResult{tc.item}, Pods: tc.pods})[0]
			var got strings.Builder
			for _, c := range it.Cells {
				got.WriteByte(glyphs[c.State])
			}
			if got.String() != tc.want {
				t.Errorf("cells = %q, want %q", got.String(), tc.want)
			}
		})
	}
}

func TestRateAndETA(t *testing.T) {
	cases := []struct {
		name     string
		first    int64
		done     int64
		total    int64
		after    time.Duration
		wantRate float64
		wantETA  time.Duration
		wantOK   bool
	}{
		{"nothing finished yet", 0, 0, 20, 5 * time.Second, 0, 0, false},
		{"half done in 10s", 0, 10, 20, 10 * time.Second, 1, 10 * time.Second, true},
		{"rate counts from first sight", 8, 12, 20, 2 * time.Second, 2, 4 * time.Second, true},
		{"done: no ETA", 0, 20, 20, 4 * time.Second, 5, 0, true},
		{"unknown total: no ETA", 0, 3, -1, 3 * time.Second, 1, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewModel()
			m.Apply(runner.Snapshot{Time: t0, Items: []runner.ItemResult{indexedJob("", "", runner.Counts{Succeeded: tc.first, Completions: tc.total})}})
			m.Apply(runner.Snapshot{Time: t0.Add(tc.after / 2), Items: []runner.ItemResult{indexedJob("", "", runner.Counts{Succeeded: tc.done, Completions: tc.total})}})
			m.Tick(t0.Add(tc.after))
			rate, eta, ok := m.Rate(m.items[0])
			if ok != tc.wantOK || rate != tc.wantRate || eta != tc.wantETA {
				t.Errorf("Rate = %v, %v, %v; want %v, %v, %v", rate, eta, ok, tc.wantRate, tc.wantETA, tc.wantOK)
			}
		})
	}
}

func TestRenderGolden(t *testing.T) {
	m := NewModel()
	m.Apply(runner.Snapshot{Time: t0, Items: []runner.ItemResult{indexedJob("", "", runner.Counts{Completions: 20})}})
	m.Apply(runner.Snapshot{
		Time:  t0.Add(4 * time.Second),
		Items: []runner.ItemResult{indexedJob("0-7", "", runner.Counts{Active: 3, Succeeded: 8, Failed: 1, Completions: 20})},
		Pods: []runner.PodState{
			{Item: 0, Name: "idx-8-a", Index: 8, Phase: corev1.PodFailed, Created: t0},
			{Item: 0, Name: "idx-8-b", Index: 8, Phase: corev1.PodRunning, Created: t0.Add(time.Second)},
			{Item: 0, Name: "idx-9-a", Index: 9, Phase: corev1.PodRunning},
			{Item: 0, Name: "idx-10-a", Index: 10, Phase: corev1.PodPending},
		},
	})
	m.AddLog(runner.LogLine{Pod: "idx-8-b", Text: "retrying"})
	for _, line := range []string{"one", "two", "three", "boom: a very long line that does not fit the width of the view"} {
		m.AddLog(runner.LogLine{Pod: "idx-8-a", Text: line})
	}
	m.Tick(t0.Add(8 * time.Second))
	got := m.Render(Layout{Width: 60, GridRows: 2, FailingShown: 2}, Palette{})
	want := "job/idx [===========                  ] 8/20  1.0/s  ETA 12s\n" +
		"  active 3, failed 1, restarts 1, elapsed 8s\n" +
		"  ########>>..........\n" +
		"  index 8 running (1 restarts) idx-8-b\n" +
		"    | retrying\n"
	if got != want {
		t.Errorf("render:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(got, "\x1b") {
		t.Error("plain rendering has escape sequences")
	}

	m.Apply(runner.Snapshot{
		Time: t0.Add(10 * time.Second),
		Items: []runner.ItemResult{{Kind: "Job", Name: "idx", Indexed: true, Outcome: runner.OutcomeFailed, Reason: "BackoffLimitExceeded",
			CompletedIndexes: "0-7", FailedIndexes: "8", Counts: runner.Counts{Succeeded: 8, Failed: 2, Completions: 20}}},
		Pods: []runner.PodState{{Item: 0, Name: "idx-8-a", Index: 8, Phase: corev1.PodFailed}},
	})
	got = m.Render(Layout{Width: 60, GridRows: 2, FailingShown: 2}, Palette{})
	want = "job/idx [============                  ] 8/20  0.8/s  Failed\n" +
		"  active 0, failed 2, elapsed 10s\n" +
		"  ########x...........\n" +
		"  index 8 failed idx-8-a\n" +
		"    | two\n" +
		"    | three\n" +
		"    | boom: a very long line that does not fit the width of~\n"
	if got != want {
		t.Errorf("final render:\n%s\nwant:\n%s", got, want)
	}
	if !m.Finished() {
		t.Error("a failed item is finished")
	}
}
