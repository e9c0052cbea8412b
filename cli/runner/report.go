package runner

import (
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Reporter is told what a run shows while it goes: the objects created,
// the run's own messages, every change of the followed objects and their
// pods, and pod log lines. Implementations must be safe for concurrent use:
// log lines arrive from one goroutine per container.
type Reporter interface {
	// Created: the run created object ("job.batch/pi").
	Created(object string)
	// Message: a line of the run's own output (an input error, a warning).
	Message(text string)
	// Update: the followed objects or their pods changed.
	Update(Snapshot)
	// Log: a container printed a line.
	Log(LogLine)
}

// Snapshot is the state of every followed object and of its pods.
type Snapshot struct {
	Time  time.Time
	Items []ItemResult
	Pods  []PodState
}

// PodState is one pod of a followed object as the view shows it.
type PodState struct {
	// Item is the followed object's position in Snapshot.Items.
	Item int
	Name string
	// Index is the pod's completion index (Indexed Jobs) or its child
	// Job's global index (JobSets); -1 when it has none.
	Index    int
	Phase    corev1.PodPhase
	Restarts int32
	Created  time.Time
	Deleted  bool
}

// LogLine is one line a container printed.
type LogLine struct {
	Namespace, Pod, Container, Text string
	// Prefixed: several pods may run, so plain output names the pod.
	Prefixed bool
}

// Plain renders the line as plain output shows it: "[pod] text" when
// several pods may run, else the text alone.
func (l LogLine) Plain() string {
	if l.Prefixed {
		return fmt.Sprintf("[%s] %s", l.Pod, l.Text)
	}
	return l.Text
}

// plainReporter writes plain lines: logs to stdout; created objects,
// messages and a progress line whenever the counters change to stderr.
type plainReporter struct {
	mu             sync.Mutex
	stdout, stderr io.Writer
	last           string
}

// NewPlainReporter is the line output of `batchlet run --output plain`.
func NewPlainReporter(stdout, stderr io.Writer) Reporter {
	return &plainReporter{stdout: stdout, stderr: stderr}
}

func (p *plainReporter) Created(object string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.stderr, "%s created\n", object)
}

func (p *plainReporter) Message(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.stderr, text)
}

func (p *plainReporter) Update(s Snapshot) {
	line := progressLine(s.Items)
	p.mu.Lock()
	defer p.mu.Unlock()
	if line == p.last {
		return
	}
	p.last = line
	fmt.Fprintln(p.stderr, line)
}

func (p *plainReporter) Log(l LogLine) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.stdout, l.Plain())
}
