// Package eventrecord records core/v1 events exactly as client-go's
// tools/record broadcaster does, with a cheaper correlator.
//
// client-go's EventCorrelator aggregates an event, counts it (building the
// strategic-merge patch of a repeated event: two JSON encodings and a
// two-way merge, ≈ 25 µs) and only then asks the spam filter whether to
// drop it. A Job of N pods sends N SuccessfulCreate events about one
// object: after 10 they aggregate into one repeated event and after 25 the
// filter drops them, so nearly every event paid for a patch nobody sent.
// Correlator keeps every step and its state as they are and builds the
// patch only for an event the filter lets through.
package eventrecord

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

// client-go's defaults (tools/record/events_cache.go).
const (
	defaultLRUCacheSize         = 4096
	defaultAggregateMaxEvents   = 10
	defaultAggregateIntervalSec = 600
	defaultSpamBurst            = 25
	defaultSpamQPS              = 1. / 300.
)

// Correlator filters, aggregates, counts and de-duplicates events like
// record.EventCorrelator configured with the same options.
type Correlator struct {
	filter     record.EventFilterFunc
	aggregator *record.EventAggregator
	logger     *eventLogger
}

// NewCorrelator returns the correlator that
// record.NewEventCorrelatorWithOptions(options) would be.
func NewCorrelator(options record.CorrelatorOptions) *Correlator {
	o := withDefaults(options)
	spam := record.NewEventSourceObjectSpamFilter(o.LRUCacheSize, o.BurstSize, o.QPS, o.Clock, o.SpamKeyFunc)
	return &Correlator{
		filter:     spam.Filter,
		aggregator: record.NewEventAggregator(o.LRUCacheSize, o.KeyFunc, o.MessageFunc, o.MaxEvents, o.MaxIntervalInSeconds, o.Clock),
		logger:     &eventLogger{cache: lru.New(o.LRUCacheSize)},
	}
}

// withDefaults is client-go's populateDefaults.
func withDefaults(o record.CorrelatorOptions) record.CorrelatorOptions {
	if o.LRUCacheSize == 0 {
		o.LRUCacheSize = defaultLRUCacheSize
	}
	if o.BurstSize == 0 {
		o.BurstSize = defaultSpamBurst
	}
	if o.QPS == 0 {
		o.QPS = defaultSpamQPS
	}
	if o.KeyFunc == nil {
		o.KeyFunc = record.EventAggregatorByReasonFunc
	}
	if o.MessageFunc == nil {
		o.MessageFunc = record.EventAggregatorByReasonMessageFunc
	}
	if o.MaxEvents == 0 {
		o.MaxEvents = defaultAggregateMaxEvents
	}
	if o.MaxIntervalInSeconds == 0 {
		o.MaxIntervalInSeconds = defaultAggregateIntervalSec
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.SpamKeyFunc == nil {
		o.SpamKeyFunc = spamKey
	}
	return o
}

// EventCorrelate is record.EventCorrelator.EventCorrelate: the same steps
// in the same order (aggregate, observe, filter), so the same state and
// result, but the patch of a repeated event is built after the filter and
// only when the event is kept.
func (c *Correlator) EventCorrelate(newEvent *v1.Event) (*record.EventCorrelateResult, error) {
	if newEvent == nil {
		return nil, errors.New("event is nil")
	}
	aggregated, key := c.aggregator.EventAggregate(newEvent)
	observed, repeated := c.logger.observe(aggregated, key)
	if c.filter(observed) {
		return &record.EventCorrelateResult{Skip: true}, nil
	}
	var patch []byte
	var err error
	if repeated {
		patch, err = repeatPatch(observed)
	}
	return &record.EventCorrelateResult{Event: observed, Patch: patch}, err
}

// UpdateState records the server's state of an event written to the sink.
func (c *Correlator) UpdateState(event *v1.Event) {
	c.logger.update(eventKey(event), event)
}

// repeatPatch is the patch client-go's eventLogger sends for a repeated
// event: from the event with no count, message or last timestamp to it.
func repeatPatch(event *v1.Event) ([]byte, error) {
	old := *event
	old.Count = 0
	old.LastTimestamp = metav1.NewTime(time.Unix(0, 0))
	old.Message = ""
	newData, _ := json.Marshal(event)
	oldData, _ := json.Marshal(&old)
	return strategicpatch.CreateTwoWayMergePatch(oldData, newData, event)
}

// eventLog is what the logger remembers of an event it has seen.
type eventLog struct {
	count           uint
	firstTimestamp  metav1.Time
	name            string
	resourceVersion string
}

// eventLogger is client-go's eventLogger without the patch.
type eventLogger struct {
	mu    sync.Mutex
	cache *lru.Cache
}

// observe counts an event under key and returns the event to write (the
// earlier occurrence's name, version and first timestamp with the count
// raised for a repeat) and whether it repeats one already seen.
func (l *eventLogger) observe(newEvent *v1.Event, key string) (*v1.Event, bool) {
	event := new(v1.Event)
	*event = *newEvent
	l.mu.Lock()
	defer l.mu.Unlock()
	last := l.last(key)
	repeated := last.count > 0
	if repeated {
		event.Name = last.name
		event.ResourceVersion = last.resourceVersion
		event.FirstTimestamp = last.firstTimestamp
		event.Count = int32(last.count) + 1
	}
	l.cache.Add(key, logOf(event))
	return event, repeated
}

func (l *eventLogger) update(key string, event *v1.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cache.Add(key, logOf(event))
}

func (l *eventLogger) last(key string) eventLog {
	if v, ok := l.cache.Get(key); ok {
		if e, ok := v.(eventLog); ok {
			return e
		}
	}
	return eventLog{}
}

func logOf(event *v1.Event) eventLog {
	return eventLog{
		count:           uint(event.Count),
		firstTimestamp:  event.FirstTimestamp,
		name:            event.Name,
		resourceVersion: event.ResourceVersion,
	}
}

// eventKey is client-go's getEventKey: source, involved object, type,
// reason and message.
func eventKey(event *v1.Event) string {
	return strings.Join([]string{
		event.Source.Component,
		event.Source.Host,
		event.InvolvedObject.Kind,
		event.InvolvedObject.Namespace,
		event.InvolvedObject.Name,
		event.InvolvedObject.FieldPath,
		string(event.InvolvedObject.UID),
		event.InvolvedObject.APIVersion,
		event.Type,
		event.Reason,
		event.Message,
	}, "")
}

// spamKey is client-go's getSpamKey: source, involved object and type.
func spamKey(event *v1.Event) string {
	return strings.Join([]string{
		event.Source.Component,
		event.Source.Host,
		event.InvolvedObject.Kind,
		event.InvolvedObject.Namespace,
		event.InvolvedObject.Name,
		string(event.InvolvedObject.UID),
		event.InvolvedObject.APIVersion,
		event.Type,
	}, "")
}
