package image

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeReporter records what the puller shows; Sleep advances the clock and
// gives up after maxSleeps.
type fakeReporter struct {
	clock     *clocktesting.FakeClock
	events    []string
	waiting   []string
	sleeps    []time.Duration
	maxSleeps int
}

func (r *fakeReporter) Event(eventType, reason, msg string) {
	r.events = append(r.events, fmt.Sprintf("%s %s %s", eventType, reason, msg))
}
func (r *fakeReporter) Waiting(reason, msg string) { r.waiting = append(r.waiting, reason+": "+msg) }
func (r *fakeReporter) Sleep(d time.Duration) bool {
	r.sleeps = append(r.sleeps, d)
	r.clock.Step(d)
	return len(r.sleeps) < r.maxSleeps
}

func noSecrets(context.Context, string, string) (*corev1.Secret, error) {
	return nil, fmt.Errorf("not found")
}

func TestEnsure(t *testing.T) {
	reg := testRegistry(t)
	img := testImage(t, v1.Config{Cmd: []string{"true"}}, layerOf(t, entry{name: "f", content: "x"}))
	push(t, reg+"/app:1", img)
	present := reg + "/app:1"
	missing := reg + "/nope:1"

	cases := []struct {
		name      string
		image     string
		policy    corev1.PullPolicy
		preload   bool
		ok        bool
		events    []string // prefixes, in order
		waiting   []string // prefixes, in order
		wantSleep []time.Duration
	}{
		{name: "if-not-present pulls", image: present, policy: corev1.PullIfNotPresent, ok: true,
			events: []string{"Normal Pulling Pulling image \"" + present + "\"", "Normal Pulled Successfully pulled image \"" + present + "\" in "}},
		{name: "if-not-present uses the stored image", image: present, policy: corev1.PullIfNotPresent, preload: true, ok: true,
			events: []string{"Normal Pulled Container image \"" + present + "\" already present on machine"}},
		{name: "always pulls a stored image", image: present, policy: corev1.PullAlways, preload: true, ok: true,
			events: []string{"Normal Pulling ", "Normal Pulled Successfully pulled image"}},
		{name: "never without the image", image: present, policy: corev1.PullNever,
			events:    []string{"Warning ErrImageNeverPull Container image \"" + present + "\" is not present with pull policy of Never", "Warning Failed Error: ErrImageNeverPull"},
			waiting:   []string{"ErrImageNeverPull: Container image \"" + present + "\" is not present with pull policy of Never"},
			wantSleep: []time.Duration{10 * time.Second}},
		{name: "a failing pull backs off", image: missing, policy: corev1.PullIfNotPresent,
			events: []string{"Normal Pulling Pulling image \"" + missing + "\"", "Warning Failed Failed to pull image \"" + missing + "\": ", "Warning Failed Error: ErrImagePull",
				"Normal BackOff Back-off pulling image \"" + missing + "\"", "Warning Failed Error: ImagePullBackOff",
				"Normal Pulling ", "Warning Failed Failed to pull image", "Warning Failed Error: ErrImagePull",
				"Normal BackOff ", "Warning Failed Error: ImagePullBackOff"},
			waiting: []string{"ErrImagePull: ", "ImagePullBackOff: Back-off pulling image \"" + missing + "\": ErrImagePull: ",
				"ErrImagePull: ", "ImagePullBackOff: "},
			wantSleep: []time.Duration{time.Second, 9 * time.Second, time.Second, 19 * time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			p, err := NewPuller(PullerConfig{Store: s, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			if tc.preload {
				if _, err := s.put(img, mustRef(t, present)); err != nil {
					t.Fatal(err)
				}
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid"}}
			c := &corev1.Container{Name: "c", Image: tc.image, ImagePullPolicy: tc.policy}
			r := &fakeReporter{clock: clk, maxSleeps: max(len(tc.wantSleep), 1)}
			got, ok := p.Ensure(context.Background(), pod, c, noSecrets, r)
			if ok != tc.ok || (ok && got == nil) {
				t.Fatalf("Ensure ok = %v, want %v", ok, tc.ok)
			}
			matchPrefixes(t, "events", r.events, tc.events)
			matchPrefixes(t, "waiting", r.waiting, tc.waiting)
			if fmt.Sprint(r.sleeps) != fmt.Sprint(tc.wantSleep) && !(len(tc.wantSleep) == 0 && len(r.sleeps) == 0) {
				t.Errorf("sleeps = %v, want %v", r.sleeps, tc.wantSleep)
			}
		})
	}
}

func mustRef(t *testing.T, s string) string {
	t.Helper()
	r, err := ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r.Name()
}

func matchPrefixes(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s = %q, want %d matching %q", what, got, len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("%s[%d] = %q, want prefix %q", what, i, got[i], want[i])
		}
	}
}

func TestPullPolicyDefaults(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"busybox":                corev1.PullAlways,
		"busybox:latest":         corev1.PullAlways,
		"busybox:1.36":           corev1.PullIfNotPresent,
		"127.0.0.1:5000/x/y:1.0": corev1.PullIfNotPresent,
		"busybox@sha256:" + strings.Repeat("a", 64): corev1.PullIfNotPresent,
	} {
		if got := PullPolicy(&corev1.Container{Image: image}); got != want {
			t.Errorf("PullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
	if got := PullPolicy(&corev1.Container{Image: "busybox", ImagePullPolicy: corev1.PullNever}); got != corev1.PullNever {
		t.Errorf("an explicit policy was replaced by %s", got)
	}
}
