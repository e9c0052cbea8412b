package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The CI size of the kill -9 loop (hack/killloop.sh runs it at 10,000
// completions): the pods take 1–4 s, spread by index so that completions
// (and so progress) come steadily rather than in waves. The pods of the
// last loopParallelism indexes wait for a release file, so however slow
// the machine, the Job cannot complete before the last kill.
const (
	loopCompletions = 500
	loopParallelism = 20
	loopKills       = 50
)

// killLoopJob is an Indexed Job whose pods append their index to
// markers/<index> at each start, so a pod run twice shows as two lines.
// Indexes from held on wait for markers/release before they end.
func killLoopJob(name, markers string, completions, parallelism, held int) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
spec:
  completions: %d
  parallelism: %d
  completionMode: Indexed
  backoffLimit: 100000
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "echo $JOB_COMPLETION_INDEX >> /markers/$JOB_COMPLETION_INDEX; if [ $JOB_COMPLETION_INDEX -ge %d ]; then until [ -f /markers/release ]; do sleep 0.1; done; fi; sleep $(( JOB_COMPLETION_INDEX %% 3 + 1 )).$(( JOB_COMPLETION_INDEX %% 10 ))"]
        volumeMounts:
        - name: markers
          mountPath: /markers
      volumes:
      - name: markers
        hostPath:
          path: %s
`, name, completions, parallelism, held, markers)
}

// killLoopSeed is KILLLOOP_SEED when set (to replay a run), else the clock.
func killLoopSeed(t *testing.T) uint64 {
	if s := os.Getenv("KILLLOOP_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("KILLLOOP_SEED=%q: %v", s, err)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// TestKill9LoopJobExact is issue 14 item 2: kill -9 the server 50 times
// during one Indexed Job, restarting it on the same data dir each time. The
// pods' shims keep them running through every restart, so the Job ends
// with its exact count and indexes, and no index runs twice. The harness
// ends the shims (and the pods they own) when the test ends.
func TestKill9LoopJobExact(t *testing.T) {
	seed := killLoopSeed(t)
	t.Logf("kill seed %d (KILLLOOP_SEED=%d replays the kill delays)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	s := startServer(t)
	markers := t.TempDir()
	held := loopCompletions - loopParallelism
	s.applyYAML(killLoopJob("loop", markers, loopCompletions, loopParallelism, held))

	// progressed waits until the Job has more successes than at the last
	// restart and has reached kill's share of the completions, so kills
	// spread over the whole Job and each lands on one that advanced (or,
	// should the kills fall behind, until only the held pods are left).
	since := 0
	progressed := func(kill int) int {
		share := kill * loopCompletions / (loopKills + 10)
		var n int
		eventually(t, 120*time.Second, fmt.Sprintf("progress before kill %d (succeeded > %d and ≥ %d)", kill, since, share), func() bool {
			n = s.intField("job/loop", "{.status.succeeded}")
			return (n > since && n >= share) || n == held
		})
		return n
	}
	for kill := 1; kill <= loopKills; kill++ {
		before := progressed(kill)
		// A random moment after the progress, so kills land anywhere
		// in the pods' lives and the controllers' work.
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		s.kill9()
		s.start()
		since = s.intField("job/loop", "{.status.succeeded}")
		t.Logf("kill %d: succeeded %d when the delay began, %d after the restart", kill, before, since)
	}
	t.Logf("%d kills survived", loopKills)
	release(t, filepath.Join(markers, "release"))
	s.waitCondition("job/loop", "complete", 300*time.Second)
	s.expectJSONPath(t, "job/loop", "{.status.succeeded}|{.status.failed}|{.status.completedIndexes}|{.status.failedIndexes}",
		fmt.Sprintf("%d||0-%d|", loopCompletions, loopCompletions-1))
	checkEachIndexRanOnce(t, s, "loop", markers, loopCompletions)
}

// checkEachIndexRanOnce reads the markers: every index started exactly
// once. An index started twice is reported with the pods that ran it.
func checkEachIndexRanOnce(t *testing.T, s *server, job, markers string, completions int) {
	t.Helper()
	byIndex := map[string][]jobPod{}
	for _, p := range s.jobPods(job) {
		byIndex[p.index] = append(byIndex[p.index], p)
	}
	reran := 0
	for i := range completions {
		b, err := os.ReadFile(filepath.Join(markers, strconv.Itoa(i)))
		if err != nil {
			t.Errorf("index %d never started: %v", i, err)
			continue
		}
		if starts := strings.Count(string(b), "\n"); starts != 1 {
			reran++
			t.Errorf("index %d started %d times, want once; its pods (name phase index reason exitCode restarts): %+v",
				i, starts, byIndex[strconv.Itoa(i)])
		}
	}
	if pods := len(s.jobPods(job)); pods != completions {
		t.Errorf("%d pods for %d completions: some were replaced", pods, completions)
	}
	t.Logf("%d of %d indexes ran more than once", reran, completions)
}
