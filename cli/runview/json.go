package runview

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/batchlet/batchlet/cli/runner"
)

// JSON lines of `--output json`, one object per line, each with "type" and
// "time" (RFC 3339):
//
//	stderr  {"type":"created","object":"job.batch/pi"}
//	stderr  {"type":"message","text":"warning: ..."}
//	stderr  {"type":"status","items":[{"object":"job/pi","outcome":"","counts":{...},
//	         "restarts":0,"indexes":{"succeeded":"0-3","running":"4","pending":"5-9","failed":""}}]}
//	stdout  {"type":"log","namespace":"default","pod":"pi-x","container":"pi","text":"..."}
//	stdout  {"type":"result", ...the run's result: items, exitCode, elapsedNanos}
//
// A status line is written whenever an item's counters, outcome or index
// states change.
type jsonReporter struct {
	mu             sync.Mutex
	stdout, stderr io.Writer
	now            func() time.Time
	last           string
}

// NewJSONReporter writes the JSON lines of --output json.
func NewJSONReporter(stdout, stderr io.Writer, now func() time.Time) runner.Reporter {
	if now == nil {
		now = time.Now
	}
	return &jsonReporter{stdout: stdout, stderr: stderr, now: now}
}

type jsonEvent struct {
	Type      string       `json:"type"`
	Time      string       `json:"time"`
	Object    string       `json:"object,omitempty"`
	Text      *string      `json:"text,omitempty"`
	Items     []jsonStatus `json:"items,omitempty"`
	Namespace string       `json:"namespace,omitempty"`
	Pod       string       `json:"pod,omitempty"`
	Container string       `json:"container,omitempty"`
}

type jsonStatus struct {
	Object   string            `json:"object"`
	Outcome  runner.Outcome    `json:"outcome"`
	Reason   string            `json:"reason,omitempty"`
	Counts   runner.Counts     `json:"counts"`
	Restarts int64             `json:"restarts"`
	Indexes  map[string]string `json:"indexes"`
}

func (j *jsonReporter) write(w io.Writer, ev any) {
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, _ = w.Write(append(b, '\n'))
}

func (j *jsonReporter) stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (j *jsonReporter) Created(object string) {
	j.write(j.stderr, jsonEvent{Type: "created", Time: j.stamp(j.now()), Object: object})
}

func (j *jsonReporter) Message(text string) {
	j.write(j.stderr, jsonEvent{Type: "message", Time: j.stamp(j.now()), Text: &text})
}

func (j *jsonReporter) Log(l runner.LogLine) {
	text := l.Text
	j.write(j.stdout, jsonEvent{Type: "log", Time: j.stamp(j.now()), Namespace: l.Namespace, Pod: l.Pod, Container: l.Container, Text: &text})
}

func (j *jsonReporter) Update(s runner.Snapshot) {
	views := Items(s)
	items := make([]jsonStatus, 0, len(views))
	for i, v := range views {
		idx := map[string]string{}
		for st := Pending; st <= Failed; st++ {
			idx[st.String()] = Intervals(v.Cells, st)
		}
		items = append(items, jsonStatus{Object: v.Ref, Outcome: v.Outcome, Reason: s.Items[i].Reason, Counts: v.Counts, Restarts: v.Restarts, Indexes: idx})
	}
	key, _ := json.Marshal(items)
	j.mu.Lock()
	changed := string(key) != j.last
	j.last = string(key)
	j.mu.Unlock()
	if changed {
		j.write(j.stderr, jsonEvent{Type: "status", Time: j.stamp(s.Time), Items: items})
	}
}

// WriteResult writes the run's result as the last JSON line of stdout.
func WriteResult(w io.Writer, res *runner.Result) error {
	b, err := json.Marshal(struct {
		Type string `json:"type"`
		*runner.Result
	}{"result", res})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
