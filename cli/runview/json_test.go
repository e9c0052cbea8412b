package runview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/batchlet/batchlet/cli/runner"
)

func TestJSONReporter(t *testing.T) {
	var stdout, stderr bytes.Buffer
	clock := func() time.Time { return t0 }
	r := NewJSONReporter(&stdout, &stderr, clock)
	r.Created("job.batch/idx")
	snap := runner.Snapshot{Time: t0, Items: []runner.ItemResult{indexedJob("0", "", runner.Counts{Active: 1, Succeeded: 1, Completions: 3})},
		Pods: []runner.PodState{{Item: 0, Name: "idx-1-a", Index: 1, Phase: corev1.PodRunning}}}
	r.Update(snap)
	r.Update(snap) // unchanged: no second status line
	r.Log(runner.LogLine{Namespace: "default", Pod: "idx-1-a", Container: "c", Text: ""})
	r.Message("interrupted")
	if err := WriteResult(&stdout, &runner.Result{ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	wantErr := `{"type":"created","time":"2026-01-02T03:04:05Z","object":"job.batch/idx"}` + "\n" +
		`{"type":"status","time":"2026-01-02T03:04:05Z","items":[{"object":"job/idx","outcome":"","counts":{"active":1,"ready":0,"succeeded":1,"failed":0,"terminating":0,"completions":3},"restarts":0,"indexes":{"failed":"","pending":"2","running":"1","succeeded":"0"}}]}` + "\n" +
		`{"type":"message","time":"2026-01-02T03:04:05Z","text":"interrupted"}` + "\n"
	if stderr.String() != wantErr {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), wantErr)
	}
	wantOut := `{"type":"log","time":"2026-01-02T03:04:05Z","text":"","namespace":"default","pod":"idx-1-a","container":"c"}` + "\n" +
		`{"type":"result","items":null,"exitCode":1,"elapsedNanos":0}` + "\n"
	if stdout.String() != wantOut {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), wantOut)
	}
	if strings.Contains(stdout.String()+stderr.String(), "\x1b") {
		t.Error("JSON output has escape sequences")
	}
}

// The live model quits once the run is done; its frames end with a newline
// (the line the renderer clears at the end, where an echoed ^C lands).
func TestLiveModelFinalFrame(t *testing.T) {
	l := &liveModel{view: NewModel()}
	l.Update(snapshotMsg(runner.Snapshot{Time: t0, Items: []runner.ItemResult{indexedJob("0-1", "", runner.Counts{Succeeded: 2, Completions: 2})}}))
	if _, cmd := l.Update(doneMsg{}); cmd == nil {
		t.Fatal("done does not quit")
	}
	if v := l.View(); !strings.HasSuffix(v, "  ##\n") || !strings.Contains(v, "2/2") {
		t.Errorf("final frame:\n%q", v)
	}
}
