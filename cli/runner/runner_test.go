package runner

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseManifest(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []string // kind/name
		wantErr string
	}{
		{"two yaml documents and an empty one", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: b}\n", []string{"ConfigMap/a", "Job/b"}, ""},
		{"json", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"}}`, []string{"Job/j"}, ""},
		{"list is flattened", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: batch/v1\n  kind: Job\n  metadata: {name: x}\n", []string{"Job/x"}, ""},
		{"missing kind", "apiVersion: batch/v1\nmetadata: {name: x}\n", nil, "Object 'Kind' is missing"},
		{"nothing", "", nil, "no objects passed to run"},
		{"malformed", "apiVersion: [", nil, "document 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := ParseManifest(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+"/"+o.GetName())
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	objs, err := ParseManifest(strings.NewReader(y))
	if err != nil {
		t.Fatal(err)
	}
	return objs[0]
}

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name        string
		y           string
		wantOutcome Outcome
		wantReason  string
		wantCounts  Counts
	}{
		{"running job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\nspec: {completions: 4}\nstatus: {active: 2, succeeded: 1}\n",
			OutcomeRunning, "", Counts{Active: 2, Succeeded: 1, Completions: 4}},
		{"interim condition is not the end", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\nspec: {completions: 1}\nstatus:\n  conditions:\n  - {type: FailureTarget, status: 'True', reason: BackoffLimitExceeded}\n",
			OutcomeRunning, "", Counts{Completions: 1}},
		{"failed job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\nspec: {completions: 12}\nstatus:\n  failed: 3\n  conditions:\n  - {type: FailureTarget, status: 'True', reason: PodFailurePolicy}\n  - {type: Failed, status: 'True', reason: PodFailurePolicy, message: m}\n",
			OutcomeFailed, "PodFailurePolicy", Counts{Failed: 3, Completions: 12}},
		{"work queue job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\nspec: {parallelism: 3}\nstatus:\n  succeeded: 3\n  conditions:\n  - {type: Complete, status: 'True', reason: CompletionsReached}\n",
			OutcomeComplete, "CompletionsReached", Counts{Succeeded: 3, Completions: -1}},
		{"completed jobset counts child jobs", "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: s}\nspec:\n  replicatedJobs:\n  - {name: leader, replicas: 1}\n  - {name: workers, replicas: 2}\nstatus:\n  replicatedJobsStatus:\n  - {name: leader, succeeded: 1}\n  - {name: workers, succeeded: 2}\n  conditions:\n  - {type: Completed, status: 'True', reason: AllJobsCompleted}\n",
			OutcomeComplete, "AllJobsCompleted", Counts{Succeeded: 3, Completions: 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := evaluate(obj(t, tc.y))
			if got.Outcome != tc.wantOutcome || got.Reason != tc.wantReason || got.Counts != tc.wantCounts {
				t.Errorf("evaluate = outcome %q reason %q counts %+v; want %q %q %+v", got.Outcome, got.Reason, got.Counts, tc.wantOutcome, tc.wantReason, tc.wantCounts)
			}
		})
	}
}

func TestSummaryNamesTheKindsCondition(t *testing.T) {
	var buf bytes.Buffer
	WriteSummary(&buf, &Result{Items: []ItemResult{
		{Kind: "Job", Name: "pi", Outcome: OutcomeComplete, Reason: "CompletionsReached", Counts: Counts{Succeeded: 1}},
		{Kind: "JobSet", Name: "js", Outcome: OutcomeFailed, Reason: "ReachedMaxRestarts", Restarts: 3,
			FailedPods: []PodExit{{Pod: "js-leader-0-0-x", Container: "leader", ExitCode: 1, Reason: "Error"}}},
	}, ExitCode: ExitFailed})
	out := buf.String()
	for _, want := range []string{"job/pi Complete (CompletionsReached)", "jobset/js Failed (ReachedMaxRestarts)", "restarts 3", "pod js-leader-0-0-x container leader exited 1 Error", "exit code 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if line := progressLine([]ItemResult{{Kind: "JobSet", Name: "js", Outcome: OutcomeComplete, Counts: Counts{Succeeded: 3, Completions: 3}}}); line != "jobset/js: 0 active, 3/3 jobs succeeded, 0 failed — Completed" {
		t.Errorf("progress line = %q", line)
	}
}
