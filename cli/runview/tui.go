package runview

import (
	"io"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/batchlet/batchlet/cli/runner"
)

// Messages the live program receives.
type (
	snapshotMsg runner.Snapshot
	logMsg      runner.LogLine
	tickMsg     time.Time
	doneMsg     struct{}
)

// tickEvery refreshes elapsed time, rate and ETA between changes.
const tickEvery = time.Second

// liveModel is the bubbletea model around Model.
type liveModel struct {
	view          *Model
	palette       Palette
	width, height int
	done          bool
}

func (l *liveModel) Init() tea.Cmd { return tick() }

func tick() tea.Cmd {
	return tea.Tick(tickEvery, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (l *liveModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		l.width, l.height = msg.Width, msg.Height
	case snapshotMsg:
		l.view.Apply(runner.Snapshot(msg))
	case logMsg:
		l.view.AddLog(runner.LogLine(msg))
	case tickMsg:
		l.view.Tick(time.Time(msg))
		if !l.done {
			return l, tick()
		}
	case doneMsg:
		l.done = true
		return l, tea.Quit
	}
	return l, nil
}

// View fits the height: a third of it for grids, at least one row each.
// It ends with a newline, so the cursor rests on a blank line: an echoed
// ^C lands there, and the renderer's final erase of the cursor's line
// leaves the last frame whole.
func (l *liveModel) View() string {
	width, height := l.width, l.height
	if width <= 0 {
		width, height = 80, 24
	}
	return l.view.Render(Layout{Width: width - 1, GridRows: max(height/3, 1), FailingShown: 3}, l.palette)
}

// terminalPalette colours grid cells by state for the terminal behind r.
func terminalPalette(r *lipgloss.Renderer) Palette {
	style := func(color string) func(string) string {
		s := r.NewStyle().Foreground(lipgloss.Color(color))
		return func(text string) string { return s.Render(text) }
	}
	return Palette{
		Cell: [4]func(string) string{style("8"), style("12"), style("10"), style("9")},
		Dim:  style("8"),
		Bad:  style("9"),
	}
}

// tuiReporter hands the runner's reports to the live program: log lines
// and messages are printed above the live area (the program's renderer
// keeps them intact), snapshots redraw it.
type tuiReporter struct {
	p      *tea.Program
	mu     sync.Mutex
	closed bool
}

func (t *tuiReporter) println(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.p.Println(line) // in order: Println hands the line to the event loop
	}
}

func (t *tuiReporter) Created(object string) { t.println(object + " created") }
func (t *tuiReporter) Message(text string)   { t.println(text) }
func (t *tuiReporter) Update(s runner.Snapshot) {
	t.p.Send(snapshotMsg(s))
}

func (t *tuiReporter) Log(l runner.LogLine) {
	t.p.Send(logMsg(l))
	t.println(l.Plain())
}

// close stops printing: the program is about to end.
func (t *tuiReporter) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
}

// Live shows the live view on out (a terminal) while work runs with the
// reporter that feeds it, and returns once work returned and the final
// view is drawn. It reads no input: Ctrl-C reaches the process as SIGINT,
// which the caller handles, and the terminal is left as it was.
func Live(out io.Writer, work func(runner.Reporter)) error {
	view := &liveModel{view: NewModel(), palette: terminalPalette(lipgloss.NewRenderer(out))}
	p := tea.NewProgram(view, tea.WithOutput(out), tea.WithInput(nil), tea.WithoutSignalHandler())
	rep := &tuiReporter{p: p}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		work(rep)
		rep.close()
		p.Send(doneMsg{})
	}()
	_, err := p.Run()
	rep.close()
	<-finished
	return err
}
