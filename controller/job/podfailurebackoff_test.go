package job

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestParsePodFailureBackoff(t *testing.T) {
	const defInitial, defMax = 10 * time.Second, 10 * time.Minute
	cases := map[string]struct {
		value                string
		wantInitial, wantMax time.Duration
		wantErr              string
	}{
		"both":                      {value: "initial=1s,max=30s", wantInitial: time.Second, wantMax: 30 * time.Second},
		"spaces":                    {value: " max=1m , initial=2s ", wantInitial: 2 * time.Second, wantMax: time.Minute},
		"initial only":              {value: "initial=500ms", wantInitial: 500 * time.Millisecond, wantMax: defMax},
		"max only, above default":   {value: "max=1h", wantInitial: defInitial, wantMax: time.Hour},
		"max below default initial": {value: "max=3s", wantInitial: 3 * time.Second, wantMax: 3 * time.Second},
		"initial above max":         {value: "initial=1m,max=30s", wantErr: "initial=1m0s is above max=30s"},
		"unknown key":               {value: "initial=1s,cap=30s", wantErr: `unknown key "cap": want initial or max`},
		"not key=value":             {value: "1s", wantErr: `"1s" is not key=duration (want e.g. initial=1s,max=30s)`},
		"bad duration":              {value: "initial=ten", wantErr: `initial: time: invalid duration "ten"`},
		"zero":                      {value: "max=0s", wantErr: "max=0s: must be positive"},
		"empty":                     {value: "", wantErr: `"" is not key=duration (want e.g. initial=1s,max=30s)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			initial, limit, err := parsePodFailureBackoff(tc.value, defInitial, defMax)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || initial != tc.wantInitial || limit != tc.wantMax {
				t.Fatalf("got %v, %v, %v; want %v, %v", initial, limit, err, tc.wantInitial, tc.wantMax)
			}
		})
	}
}

func TestValidatePodFailureBackoff(t *testing.T) {
	cases := []struct {
		initial, limit time.Duration
		want           string
	}{
		{10 * time.Second, 10 * time.Minute, ""},
		{time.Second, time.Second, ""},
		{0, time.Minute, "initial pod failure backoff 0s: must be positive"},
		{time.Second, -time.Second, "maximal pod failure backoff -1s: must be positive"},
		{time.Minute, time.Second, "initial pod failure backoff 1m0s is above the maximum 1s"},
	}
	for _, tc := range cases {
		err := ValidatePodFailureBackoff(tc.initial, tc.limit)
		if got := errString(err); got != tc.want {
			t.Errorf("ValidatePodFailureBackoff(%v, %v) = %q, want %q", tc.initial, tc.limit, got, tc.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestDecidePodFailureBackoffAnnotation: a Job's annotation sets the delay
// before a failed pod is replaced; a bad one keeps the controller's delay
// and is reported by a Warning event when the Job starts.
func TestDecidePodFailureBackoffAnnotation(t *testing.T) {
	failedAgo := func(d time.Duration) []*v1.Pod {
		pods := mkPods(podSpec{phase: v1.PodFailed, index: -1, exit: 1}, podSpec{phase: v1.PodRunning, index: -1})
		pods[0].Status.ContainerStatuses[0].State.Terminated.FinishedAt = metav1.NewTime(now.Add(-d))
		return pods
	}
	cases := map[string]struct {
		annotation    string
		failedAgo     time.Duration
		started       bool
		wantCreates   int
		wantRequeue   time.Duration
		wantEventsHas string
	}{
		"default: 10s delay":            {failedAgo: 2 * time.Second, wantRequeue: 8 * time.Second},
		"initial=1s: replaced":          {annotation: "initial=1s", failedAgo: 2 * time.Second, wantCreates: 1},
		"initial=5s: waits 3s":          {annotation: "initial=5s,max=1m", failedAgo: 2 * time.Second, wantRequeue: 3 * time.Second},
		"bad value: default and event":  {annotation: "initial=5", failedAgo: 2 * time.Second, wantRequeue: 8 * time.Second, wantEventsHas: `Warning InvalidPodFailureBackoff annotation batchlet.dev/pod-failure-backoff="initial=5": initial: time: missing unit in duration "5"; using initial=10s,max=10m0s`},
		"bad value, started: no repeat": {annotation: "bogus", failedAgo: 2 * time.Second, started: true, wantRequeue: 8 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := baseJob(ptr.To[int32](3), 2)
			if tc.annotation != "" {
				job.Annotations = map[string]string{PodFailureBackoffAnnotation: tc.annotation}
			}
			if tc.started {
				job.Status.StartTime = ptr.To(metav1.NewTime(now.Add(-time.Minute)))
			}
			out := runPure(job, failedAgo(tc.failedAgo))
			if len(out.st.creates) != tc.wantCreates || out.st.requeueAfter != tc.wantRequeue {
				t.Fatalf("creates %d requeueAfter %v, want %d, %v", len(out.st.creates), out.st.requeueAfter, tc.wantCreates, tc.wantRequeue)
			}
			var events []string
			for _, e := range out.st.events {
				events = append(events, e.kind+" "+e.reason+" "+e.message)
			}
			if tc.wantEventsHas == "" && len(events) > 0 || tc.wantEventsHas != "" && !slices.Contains(events, tc.wantEventsHas) {
				t.Fatalf("events %q, want %q", events, tc.wantEventsHas)
			}
		})
	}
}

// TestInvalidPodFailureBackoffEvent: the controller records the Warning
// event of a bad annotation once, with the Job's first status write.
func TestInvalidPodFailureBackoffEvent(t *testing.T) {
	h := newHarness(t)
	job := newTestJob("badbackoff", 1, 1)
	job.Annotations = map[string]string{PodFailureBackoffAnnotation: "initial=1m,max=1s"}
	h.createJob(job)
	want := `Warning InvalidPodFailureBackoff annotation batchlet.dev/pod-failure-backoff="initial=1m,max=1s": initial=1m0s is above max=1s; using initial=10s,max=10m0s`
	h.eventually("the Warning event", time.Millisecond, func() bool { return slices.Contains(h.drainEvents(), want) })
	h.finishPods("default", func(*v1.Pod) (v1.PodPhase, int32) { return v1.PodSucceeded, 0 })
	h.eventually("job complete", time.Millisecond, jobFinished(h, job))
	n := 0
	for _, e := range h.drainEvents() {
		if strings.Contains(e, "InvalidPodFailureBackoff") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d InvalidPodFailureBackoff events, want 1", n)
	}
}
