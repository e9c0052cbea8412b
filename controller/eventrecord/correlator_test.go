package eventrecord

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// eventStream generates events about a few objects from a few sources,
// with few enough reasons and messages that exact repeats, aggregation
// (10 similar events) and the spam filter (25 per object) all happen.
type eventStream struct {
	rnd      *rand.Rand
	clock    *clocktesting.FakeClock
	messages int
	seq      int
}

var (
	testSources = []v1.EventSource{{Component: "job-controller"}, {Component: "kubelet", Host: "node-1"}}
	testObjects = []v1.ObjectReference{
		{Kind: "Job", Namespace: "default", Name: "big", UID: "u-big", APIVersion: "batch/v1"},
		{Kind: "Pod", Namespace: "default", Name: "big-0", UID: "u-pod", APIVersion: "v1"},
		{Kind: "Pod", Namespace: "other", Name: "p", UID: "u-p", APIVersion: "v1", FieldPath: "spec.containers{c}"},
	}
	testReasons = []string{"SuccessfulCreate", "SuccessfulDelete", "Completed"}
	testTypes   = []string{v1.EventTypeNormal, v1.EventTypeWarning}
	testSteps   = []time.Duration{0, 0, 0, time.Millisecond, 10 * time.Millisecond, time.Second}
	// testLongSteps refill the spam filter's buckets (one token per 5
	// minutes by default) and end aggregation (10 minutes).
	testLongSteps = []time.Duration{30 * time.Second, 5 * time.Minute, 11 * time.Minute}
)

// next returns the next event, the clock moved on by a random step, one
// in 100 a long one.
func (s *eventStream) next() *v1.Event {
	if s.rnd.IntN(100) == 0 {
		s.clock.Step(testLongSteps[s.rnd.IntN(len(testLongSteps))])
	} else {
		s.clock.Step(testSteps[s.rnd.IntN(len(testSteps))])
	}
	s.seq++
	ref := testObjects[s.rnd.IntN(len(testObjects))]
	now := metav1.NewTime(s.clock.Now())
	return &v1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", ref.Name, s.seq), Namespace: ref.Namespace},
		InvolvedObject:      ref,
		Reason:              testReasons[s.rnd.IntN(len(testReasons))],
		Message:             s.message(),
		Source:              testSources[s.rnd.IntN(len(testSources))],
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                testTypes[s.rnd.IntN(len(testTypes))],
		ReportingController: "job-controller",
	}
}

// message is one of s.messages messages, or with none a new one.
func (s *eventStream) message() string {
	if s.messages == 0 {
		return fmt.Sprintf("Created pod: big-%d", s.seq)
	}
	return fmt.Sprintf("Created pod: big-%d", s.rnd.IntN(s.messages))
}

// written is the event as a server returns it: a new resource version and,
// for a create, the name it was given.
func written(rnd *rand.Rand, e *v1.Event, seq int) *v1.Event {
	w := e.DeepCopy()
	w.ResourceVersion = fmt.Sprint(seq)
	if rnd.IntN(4) == 0 {
		w.Name = fmt.Sprintf("server-%d", seq)
	}
	return w
}

// Correlator gives what client-go's correlator gives, event by event, for
// the same stream and the same server answers: the same skips, events
// (names, counts, timestamps, messages) and patch bytes.
//
// Streams where client-go's correlator is deterministic: once a group of
// similar events is full its aggregator drops an arbitrary message of the
// group (sets.PopAny, map order), so when a dropped message comes again
// two client-go correlators disagree on whether it aggregates. With
// unique messages (a Job's "Created pod: NAME"), no aggregation
// (MaxEvents huge) or everything aggregated (MaxEvents 1) the choice does
// not matter.
func TestCorrelatorMatchesClientGo(t *testing.T) {
	const noAggregation = 1 << 30
	tests := map[string]struct {
		options  record.CorrelatorOptions
		messages int // 0: every message new
		events   int
		noRepeat bool // the caches or the filter leave no repeat to patch
	}{
		"defaults, unique messages":               {events: 2000},
		"unique messages, small caches":           {options: record.CorrelatorOptions{LRUCacheSize: 11}, events: 2000, noRepeat: true},
		"unique messages, small burst, aggregate": {options: record.CorrelatorOptions{BurstSize: 3, MaxEvents: 4, MaxIntervalInSeconds: 60}, events: 2000, noRepeat: true},
		"unique messages, fast refill":            {options: record.CorrelatorOptions{QPS: 0.05}, events: 2000},
		"repeats, one message":                    {options: record.CorrelatorOptions{MaxEvents: noAggregation}, messages: 1, events: 3000},
		"repeats, few messages":                   {options: record.CorrelatorOptions{MaxEvents: noAggregation}, messages: 20, events: 2000},
		"repeats, small caches":                   {options: record.CorrelatorOptions{MaxEvents: noAggregation, LRUCacheSize: 11}, messages: 20, events: 2000},
		"repeats, all aggregated":                 {options: record.CorrelatorOptions{MaxEvents: 1, BurstSize: 10}, messages: 20, events: 2000},
		"repeats, custom spam key sees the message": {
			options:  record.CorrelatorOptions{MaxEvents: noAggregation, SpamKeyFunc: func(e *v1.Event) string { return e.Message }},
			messages: 30, events: 2000,
		},
	}
	for name, tc := range tests {
		for seed := uint64(1); seed <= 2; seed++ {
			t.Run(fmt.Sprintf("%s/seed %d", name, seed), func(t *testing.T) {
				clk := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC))
				opts := tc.options
				opts.Clock = clk
				want := record.NewEventCorrelatorWithOptions(opts)
				got := NewCorrelator(opts)
				rnd := rand.New(rand.NewPCG(seed, 16))
				stream := &eventStream{rnd: rnd, clock: clk, messages: tc.messages}
				var kept, patched int
				for i := range tc.events {
					e := stream.next()
					wantRes, wantErr := want.EventCorrelate(e.DeepCopy())
					gotRes, gotErr := got.EventCorrelate(e.DeepCopy())
					if (wantErr == nil) != (gotErr == nil) {
						t.Fatalf("event %d: error %v, client-go's %v", i, gotErr, wantErr)
					}
					if wantRes.Skip != gotRes.Skip {
						t.Fatalf("event %d: skip %v, client-go's %v", i, gotRes.Skip, wantRes.Skip)
					}
					if !reflect.DeepEqual(wantRes.Event, gotRes.Event) {
						t.Fatalf("event %d: event\n%+v\nclient-go's\n%+v", i, gotRes.Event, wantRes.Event)
					}
					if !bytes.Equal(wantRes.Patch, gotRes.Patch) {
						t.Fatalf("event %d: patch %s, client-go's %s", i, gotRes.Patch, wantRes.Patch)
					}
					if wantRes.Skip {
						continue
					}
					kept++
					if wantRes.Patch != nil {
						patched++
					}
					if rnd.IntN(5) > 0 { // else the write failed: no new state
						w := written(rnd, wantRes.Event, i)
						want.UpdateState(w.DeepCopy())
						got.UpdateState(w)
					}
				}
				// The stream must exercise the filter and repeats.
				if kept == tc.events || kept == 0 || (patched == 0 && !tc.noRepeat) {
					t.Errorf("stream kept %d of %d events, %d patched: not a test of skipping and repeating", kept, tc.events, patched)
				}
			})
		}
	}
}

func TestCorrelatorNilEvent(t *testing.T) {
	if _, err := NewCorrelator(record.CorrelatorOptions{}).EventCorrelate(nil); err == nil {
		t.Error("nil event: no error, want one like client-go's")
	}
}

// A Job's stream: one SuccessfulCreate per pod. The first 9 go out as
// they are, the 10th starts the aggregate, the 25th is the last the
// spam filter lets through.
func TestCorrelatorJobStream(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC))
	c := NewCorrelator(record.CorrelatorOptions{Clock: clk})
	job := testObjects[0]
	type out struct {
		Count   int32
		Message string
		Patched bool
	}
	var got []out
	for i := range 40 {
		e := &v1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("big.%d", i), Namespace: "default"},
			InvolvedObject: job, Reason: "SuccessfulCreate", Type: v1.EventTypeNormal,
			Message: fmt.Sprintf("Created pod: big-%d", i), Source: testSources[0], Count: 1,
		}
		res, err := c.EventCorrelate(e)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if res.Skip {
			continue
		}
		got = append(got, out{res.Event.Count, res.Event.Message, res.Patch != nil})
		w := res.Event.DeepCopy()
		w.ResourceVersion = fmt.Sprint(i)
		c.UpdateState(w)
	}
	var want []out
	for i := range 9 {
		want = append(want, out{1, fmt.Sprintf("Created pod: big-%d", i), false})
	}
	want = append(want, out{1, "(combined from similar events): Created pod: big-9", false})
	for i := 10; i < 25; i++ {
		want = append(want, out{int32(i - 8), fmt.Sprintf("(combined from similar events): Created pod: big-%d", i), true})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events written:\n%+v\nwant\n%+v", got, want)
	}
}
