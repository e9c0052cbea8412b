package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batchlet/batchlet/cli/runner"
)

// batchlet watch exits as batchlet wait does.
func TestWatchExitCode(t *testing.T) {
	live := context.Background()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancelExpired()
	item := func(o runner.Outcome) []runner.ItemResult {
		return []runner.ItemResult{{Kind: "Job", Name: "pi", Outcome: o}}
	}
	cases := []struct {
		name        string
		parent, ctx context.Context
		res         runner.Result
		want        int
		wantStderr  string
	}{
		{"complete", live, live, runner.Result{Items: item(runner.OutcomeComplete)}, 0, "elapsed"},
		{"failed", live, live, runner.Result{Items: item(runner.OutcomeFailed), ExitCode: runner.ExitFailed}, 1, "job/pi Failed"},
		{"deleted before it finished", live, live, runner.Result{Items: item(runner.OutcomeDeleted), ExitCode: runner.ExitFailed}, waitExitError, "job/pi Deleted"},
		{"timeout", live, expired, runner.Result{ExitCode: runner.ExitInterrupted}, waitExitTimeout, "error: timed out after 1s waiting for job/pi to finish"},
		{"interrupted", canceled, canceled, runner.Result{ExitCode: runner.ExitInterrupted}, runner.ExitInterrupted, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			f := watchFlags{waitFlags: waitFlags{timeout: time.Second}}
			target := waitTarget{kind: "Job", name: "pi"}
			got := watchExitCode(tc.parent, tc.ctx, f, target, outputPlain, &stdout, &stderr, &tc.res)
			if got != tc.want {
				t.Errorf("exit code %d, want %d", got, tc.want)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}
