package indexgrid

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestCells(t *testing.T) {
	tests := []struct {
		name string
		n    int
		pods []Pod
		want []Cell
	}{
		{"no pods", 2, nil, []Cell{{}, {}}},
		{"latest pod wins, failures count as restarts", 2, []Pod{
			{Name: "a", Index: 0, Phase: corev1.PodFailed},
			{Name: "b", Index: 0, Phase: corev1.PodRunning, Restarts: 1},
			{Name: "c", Index: 1, Phase: corev1.PodSucceeded},
		}, []Cell{{State: Running, Restarts: 2, Pod: "b"}, {State: Succeeded, Pod: "c"}}},
		{"deleted running pod is replaced", 1, []Pod{
			{Name: "a", Index: 0, Phase: corev1.PodRunning, Deleted: true},
		}, []Cell{{}}},
		{"a running pod keeps its index running", 1, []Pod{
			{Name: "a", Index: 0, Phase: corev1.PodRunning},
			{Name: "b", Index: 0, Phase: corev1.PodSucceeded},
		}, []Cell{{State: Running, Pod: "a"}}},
		{"out of range indexes are ignored", 1, []Pod{{Name: "a", Index: 5, Phase: corev1.PodFailed}, {Name: "b", Index: -1}}, []Cell{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Cells(tt.n, tt.pods); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Cells = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestIntervalsRoundTrip(t *testing.T) {
	tests := []struct {
		text string
		n    int
		want string
	}{
		{"", 5, ""},
		{"0,3-7", 10, "0,3-7"},
		{"1,2,3", 5, "1-3"},
		{"8-20,x,4-y", 10, "8-9"},
	}
	for _, tt := range tests {
		cells := make([]Cell, tt.n)
		Mark(cells, tt.text, Failed)
		if got := Intervals(cells, Failed); got != tt.want {
			t.Errorf("Mark(%q) then Intervals = %q, want %q", tt.text, got, tt.want)
		}
	}
}
