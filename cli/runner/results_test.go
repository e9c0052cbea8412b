package runner

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/batchlet/batchlet/results"
)

func result(pod, container string, attempt, code int32, tail string) *results.ContainerResult {
	return &results.ContainerResult{Spec: results.ContainerResultSpec{PodName: pod, ContainerName: container, Attempt: attempt,
		ExitCode: code, Reason: "Error", LogTail: tail}}
}

func TestWithResults(t *testing.T) {
	rs := []*results.ContainerResult{
		result("pi-0", "main", 0, 1, "old attempt\n"),
		result("pi-0", "main", 1, 2, "a\nb\nc\n"),
		result("pi-1", "main", 0, 0, "fine\n"),
	}
	cases := []struct {
		name  string
		exits []PodExit
		want  []PodExit
	}{
		{"live pods get the log lines of their latest failed attempt",
			[]PodExit{{Pod: "pi-0", Container: "main", ExitCode: 2, Reason: "Error"}, {Pod: "pi-9", Reason: "DeadlineExceeded"}},
			[]PodExit{{Pod: "pi-0", Container: "main", ExitCode: 2, Reason: "Error", LastLogLines: []string{"b", "c"}}, {Pod: "pi-9", Reason: "DeadlineExceeded"}}},
		{"pods gone: the failed results stand in",
			nil,
			[]PodExit{{Pod: "pi-0", Container: "main", ExitCode: 2, Reason: "Error", LastLogLines: []string{"b", "c"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := withResults(tc.exits, rs, 2); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("exits = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestSummaryPrintsLogLines(t *testing.T) {
	var out bytes.Buffer
	WriteSummary(&out, &Result{Items: []ItemResult{{Kind: "Job", Name: "pi", Outcome: OutcomeFailed,
		FailedPods: []PodExit{{Pod: "pi-0", Container: "main", ExitCode: 2, Reason: "Error", LastLogLines: []string{"b", "c"}}}}}})
	if want := "  pod pi-0 container main exited 2 Error\n    | b\n    | c\n"; !strings.Contains(out.String(), want) {
		t.Errorf("summary:\n%s\nwant it to contain\n%s", out.String(), want)
	}
}
