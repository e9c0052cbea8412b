package cli

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/batchlet/batchlet/cli/runner"
)

func TestParseWaitTarget(t *testing.T) {
	cases := []struct {
		arg      string
		wantKind string
		wantName string
		wantErr  string
	}{
		{"pi", "Job", "pi", ""},
		{"job/pi", "Job", "pi", ""},
		{"jobs.batch/pi", "Job", "pi", ""},
		{"jobset/train", "JobSet", "train", ""},
		{"JobSet/train", "JobSet", "train", ""},
		{"jobsets.jobset.x-k8s.io/train", "JobSet", "train", ""},
		{"pod/p", "", "", `batchlet wait follows Jobs and JobSets, not "pod"`},
		{"job/", "", "", `"job/" is not NAME, job/NAME or jobset/NAME`},
		{"job/a/b", "", "", `"job/a/b" is not NAME, job/NAME or jobset/NAME`},
	}
	for _, tc := range cases {
		t.Run(tc.arg, func(t *testing.T) {
			got, err := parseWaitTarget(tc.arg)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.kind != tc.wantKind || got.name != tc.wantName {
				t.Errorf("got %+v, %v; want %s %s", got, err, tc.wantKind, tc.wantName)
			}
		})
	}
}

func TestWaitExitCodeFromConditions(t *testing.T) {
	cases := []struct {
		name     string
		y        string
		wantDone bool
		wantCode int
		wantHead string
	}{
		{"job complete", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nstatus:\n  conditions:\n  - {type: SuccessCriteriaMet, status: 'True', reason: CompletionsReached}\n  - {type: Complete, status: 'True', reason: CompletionsReached, message: Reached expected number of succeeded pods}\n",
			true, 0, "job/pi Complete (CompletionsReached): Reached expected number of succeeded pods"},
		{"job failed", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nstatus:\n  conditions:\n  - {type: FailureTarget, status: 'True', reason: BackoffLimitExceeded}\n  - {type: Failed, status: 'True', reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}\n",
			true, 1, "job/pi Failed (BackoffLimitExceeded): Job has reached the specified backoff limit"},
		{"failure target is not the end yet", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nstatus:\n  conditions:\n  - {type: FailureTarget, status: 'True', reason: BackoffLimitExceeded}\n",
			false, 0, ""},
		{"suspended job waits", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nstatus:\n  conditions:\n  - {type: Suspended, status: 'True', reason: JobSuspended}\n",
			false, 0, ""},
		{"a false Complete is not complete", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nstatus:\n  conditions:\n  - {type: Complete, status: 'False'}\n",
			false, 0, ""},
		{"jobset completed", "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js}\nstatus:\n  conditions:\n  - {type: Completed, status: 'True', reason: AllJobsCompleted, message: jobset completed successfully}\n",
			true, 0, "jobset/js Completed (AllJobsCompleted): jobset completed successfully"},
		{"jobset failed", "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js}\nstatus:\n  conditions:\n  - {type: Failed, status: 'True', reason: FailedJobs, message: jobset failed due to one or more job failures}\n",
			true, 1, "jobset/js Failed (FailedJobs): jobset failed due to one or more job failures"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			if err := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(tc.y), 4096).Decode(&m); err != nil {
				t.Fatal(err)
			}
			it := runner.Evaluate(&unstructured.Unstructured{Object: m})
			code, done := finishedExitCode(it)
			if done != tc.wantDone || code != tc.wantCode {
				t.Fatalf("finishedExitCode = %d, %v; want %d, %v", code, done, tc.wantCode, tc.wantDone)
			}
			if done && runner.Headline(it) != tc.wantHead {
				t.Errorf("headline %q, want %q", runner.Headline(it), tc.wantHead)
			}
		})
	}
}
