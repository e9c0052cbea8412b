package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batchlet/batchlet/results"
	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/sim"
)

// pairWait bounds how long the first status patch and the first result
// create wait for each other: only code that writes them one after the
// other runs into it, and the test then fails.
const pairWait = 5 * time.Second

// writeRecorder is the status patch, the results writer and the log reader
// of an agent, recording the order of what they are asked. The first patch
// and the first create each wait (up to pairWait) for the other to begin,
// so they complete only when the agent has both in flight at once.
type writeRecorder struct {
	sim *sim.Runtime

	mu          sync.Mutex
	seq         []string
	patchErrs   []error // answers of successive patches; nil when out
	createErrs  []error // answers of successive creates
	created     []string
	patchBegun  chan struct{}
	createBegun chan struct{}
}

func newWriteRecorder(s *sim.Runtime, patchErrs, createErrs []error) *writeRecorder {
	return &writeRecorder{sim: s, patchErrs: patchErrs, createErrs: createErrs,
		patchBegun: make(chan struct{}), createBegun: make(chan struct{})}
}

func (w *writeRecorder) note(s string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq = append(w.seq, s)
	return len(w.seq)
}

// next pops the next answer of errs.
func (w *writeRecorder) next(errs *[]error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(*errs) == 0 {
		return nil
	}
	err := (*errs)[0]
	*errs = (*errs)[1:]
	return err
}

// meet marks the caller's side begun and waits for the other side, on the
// first call of each side only.
func (w *writeRecorder) meet(mine, other chan struct{}, side string) {
	select {
	case <-mine:
		return // not the first call
	default:
	}
	close(mine)
	select {
	case <-other:
	case <-time.After(pairWait):
		w.note(side + " alone")
	}
}

func (w *writeRecorder) patch(_ context.Context, _, _ string, _ types.PatchType, _ []byte) (string, error) {
	w.note("patch")
	w.meet(w.patchBegun, w.createBegun, "patch")
	if err := w.next(&w.patchErrs); err != nil {
		return "", err
	}
	return "2", nil
}

func (w *writeRecorder) Create(_ context.Context, r *results.ContainerResult) error {
	w.note("create")
	w.meet(w.createBegun, w.patchBegun, "create")
	if err := w.next(&w.createErrs); err != nil {
		return err
	}
	w.mu.Lock()
	w.created = append(w.created, r.Name)
	w.mu.Unlock()
	w.note("created")
	return nil
}

// recordingRuntime is the sim runtime noting the logs read.
type recordingRuntime struct {
	*sim.Runtime
	w *writeRecorder
}

func (r recordingRuntime) Logs(ctx context.Context, uid types.UID, container string, opts runtime.LogOptions, out io.Writer) error {
	r.w.note("logs")
	return r.Runtime.Logs(ctx, uid, container, opts, out)
}

// TestResultWrittenBesideStatus: the ContainerResult of an attempt that
// terminated is created while the status showing it is patched (both
// writes wait for one commit instead of two in a row), from a log tail
// read before either; writeStatus returns only once both are done, so the
// result is there when the agent moves on from the pod, as when it was
// created after the status. A result that failed is created again with
// the status when that failed too, and not otherwise (results are best
// effort and do not hold the status back).
func TestResultWrittenBesideStatus(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name         string
		patchErrs    []error
		createErrs   []error
		wantErr      bool
		wantCreates  int  // create calls over the first write and its retry
		wantRecorded bool // the attempt counts as recorded in the end
	}{
		{name: "both written", wantCreates: 1, wantRecorded: true},
		{name: "status fails, result written", patchErrs: []error{boom}, wantErr: true, wantCreates: 1, wantRecorded: true},
		{name: "both fail: the result goes again with the status", patchErrs: []error{boom}, createErrs: []error{boom},
			wantErr: true, wantCreates: 2, wantRecorded: true},
		{name: "result fails beside a written status: not again", createErrs: []error{boom}, wantCreates: 1, wantRecorded: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			s := sim.New(ctx, clk)
			w := newWriteRecorder(s, tc.patchErrs, tc.createErrs)
			a, err := New(Config{Client: fake.NewClientset(), NodeName: "node-1", Runtime: recordingRuntime{Runtime: s, w: w}, Clock: clk,
				Port: -1, Logger: slog.New(slog.DiscardHandler), FirstStatusDelay: -1, PatchStatus: w.patch,
				Results: ResultsConfig{Writer: w}})
			if err != nil {
				t.Fatal(err)
			}
			pod := boundPod("p", map[string]string{sim.ExitCodeAnnotation: "3"})
			if err := s.StartPod(ctx, pod, nil); err != nil {
				t.Fatal(err)
			}
			rs, _ := s.PodStatus(pod.UID)
			st := &podState{uid: pod.UID, ns: pod.Namespace, name: pod.Name, podIP: "10.0.0.2", startTime: truncNow(clk.Now())}

			err = a.writeStatus(ctx, pod, st, rs)
			returned := w.note("returned")
			if (err != nil) != tc.wantErr {
				t.Fatalf("first write: err = %v, want error %v", err, tc.wantErr)
			}
			if slices.Contains(w.seq, "patch alone") || slices.Contains(w.seq, "create alone") {
				t.Errorf("writes = %v: the result create and the status patch were not in flight together", w.seq)
			}
			if i := slices.Index(w.seq, "logs"); i < 0 || i > slices.Index(w.seq, "patch") {
				t.Errorf("writes = %v: want the log tail read before the status patch", w.seq)
			}
			if i := slices.Index(w.seq, "created"); i >= 0 && i >= returned-1 {
				t.Errorf("writes = %v: writeStatus returned before the result was created", w.seq)
			}
			if err != nil {
				if err := a.writeStatus(ctx, pod, st, rs); err != nil {
					t.Fatalf("retry: %v", err)
				}
			}
			if got := countOf(w.seq, "create"); got != tc.wantCreates {
				t.Errorf("creates = %d (%v), want %d", got, w.seq, tc.wantCreates)
			}
			if got := st.recorded["main.0"]; got != tc.wantRecorded {
				t.Errorf("recorded = %v, want %v", got, tc.wantRecorded)
			}
			if !finished(st) {
				t.Errorf("written status = %+v, want the terminal one", st.written)
			}
		})
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
