package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const tuiGridJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: tui-grid
spec:
  completions: 20
  parallelism: 4
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
        command: ["sh", "-c", "echo hello from index $JOB_COMPLETION_INDEX; echo bye from index $JOB_COMPLETION_INDEX"]
`

// tmuxSession runs a command in a detached tmux session on a private
// server (socket), sized width x height, and returns a function reading
// the pane's whole text, scrollback included.
func tmuxSession(t *testing.T, width, height int, command string) func() string {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed (Debian package tmux; .ci/run installs it): the live view needs a real terminal")
	}
	socket := fmt.Sprintf("batchlet-e2e-%d", os.Getpid())
	run := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-L", socket}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := run("new-session", "-d", "-s", "tui", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), command); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = run("kill-server") })
	return func() string {
		out, _ := run("capture-pane", "-p", "-J", "-S", "-", "-t", "tui")
		return out
	}
}

// In a real terminal `batchlet run` shows the live view: pod logs scroll
// above it intact and the final frame shows the full progress bar and the
// index grid, followed by the summary.
func TestRunLiveViewInTmux(t *testing.T) {
	file := filepath.Join(t.TempDir(), "grid.yaml")
	if err := os.WriteFile(file, []byte(tuiGridJob), 0o600); err != nil {
		t.Fatal(err)
	}
	// The shell keeps the pane open after the run so its screen can be read.
	capture := tmuxSession(t, 120, 60, fmt.Sprintf("%s run %s; echo BATCHLET-EXIT=$?; sleep 600", binary, file))
	eventually(t, 120*time.Second, "the run's final summary in the pane", func() bool {
		return strings.Contains(capture(), "BATCHLET-EXIT=")
	})
	screen := capture()
	if !strings.Contains(screen, "BATCHLET-EXIT=0") || !strings.Contains(screen, "job/tui-grid Complete (CompletionsReached)") {
		t.Fatalf("the run did not complete:\n%s", screen)
	}
	lines := strings.Split(screen, "\n")
	progress := regexp.MustCompile(`^job/tui-grid \[=+\] 20/20 .*Complete$`)
	grid := regexp.MustCompile(`^  #{20}$`)
	logLine := regexp.MustCompile(`^\[tui-grid-(\d+)-[a-z0-9]+\] (hello|bye) from index (\d+)$`)
	var sawProgress, sawGrid bool
	logs := map[string]bool{}
	for _, l := range lines {
		l = strings.TrimRight(l, " ")
		switch {
		case progress.MatchString(l):
			sawProgress = true
		case grid.MatchString(l):
			sawGrid = true
		case logLine.MatchString(l):
			m := logLine.FindStringSubmatch(l)
			if m[1] != m[3] {
				t.Errorf("log line of index %s in pod of index %s: %q", m[3], m[1], l)
			}
			logs[m[2]+m[3]] = true
		}
		if strings.Contains(l, "from index") && !logLine.MatchString(l) {
			t.Errorf("log line not intact (glued to the live view?): %q", l)
		}
	}
	if !sawProgress {
		t.Errorf("no progress bar at 20/20 on the screen:\n%s", screen)
	}
	if !sawGrid {
		t.Errorf("no index grid of 20 succeeded cells on the screen:\n%s", screen)
	}
	if len(logs) != 40 {
		t.Errorf("%d of the 40 log lines on the screen:\n%s", len(logs), screen)
	}
}

const watchedJobs = `apiVersion: batch/v1
kind: Job
metadata:
  name: watched-ok
spec:
  completions: 3
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
        command: ["sh", "-c", "echo ok $JOB_COMPLETION_INDEX"]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: watched-bad
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
        command: ["sh", "-c", "echo bad; exit 3"]
`

// batchlet watch follows Jobs it did not create, prints run's summary and
// exits with batchlet wait's codes; it deletes nothing.
func TestWatchExitsAsWait(t *testing.T) {
	s := startServer(t)
	if out, err := s.kubectlStdin(watchedJobs, "create", "-f", "-"); err != nil {
		t.Fatalf("kubectl create: %v\n%s", err, out)
	}
	cases := []struct {
		name     string
		args     []string
		want     int
		inStderr []string
	}{
		{"complete", []string{"job/watched-ok"}, 0, []string{"job/watched-ok: 0 active, 3/3 succeeded, 0 failed — Complete", "job/watched-ok Complete (CompletionsReached)", "exit code 0"}},
		{"failed", []string{"watched-bad"}, 1, []string{"job/watched-bad Failed (BackoffLimitExceeded)", "exited 3"}},
		{"no such job", []string{"jobset/nope"}, 2, []string{`"nope" not found`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"watch", "--kubeconfig", s.kubeconfig, "--output", "plain"}, tc.args...)
			stdout, stderr, code := batchletCmd(t, args...)
			if code != tc.want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.want, stdout, stderr)
			}
			for _, want := range tc.inStderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if strings.Contains(stdout+stderr, "\x1b") {
				t.Errorf("plain output has escape sequences")
			}
		})
	}
	if got := s.jsonpath("jobs", "{.items[*].metadata.name}"); got != "watched-bad watched-ok" {
		t.Errorf("jobs after watching: %q, want both left in place", got)
	}
}
