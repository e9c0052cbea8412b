package eventrecord

import (
	"context"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/klog/v2"
)

// client-go's retry policy for writing an event (tools/record/event.go).
const (
	maxTriesPerEvent     = 12
	defaultSleepDuration = 10 * time.Second
)

// Options configure a broadcaster; the zero value is client-go's
// record.NewBroadcaster().
type Options struct {
	// Correlator are the correlator's options
	// (record.WithCorrelatorOptions).
	Correlator record.CorrelatorOptions
	// SleepDuration is the pause between attempts to write an event
	// (record.WithSleepDuration); zero means client-go's 10 s.
	SleepDuration time.Duration
}

// broadcaster is client-go's record broadcaster whose StartRecordingToSink
// correlates with Correlator. Recorders, watchers, queueing and dropping
// are client-go's own.
type broadcaster struct {
	record.EventBroadcaster
	options Options
	ctx     context.Context
	cancel  context.CancelFunc
}

// NewBroadcaster returns a record.EventBroadcaster that behaves as
// record.NewBroadcaster with the same options.
func NewBroadcaster(options Options) record.EventBroadcaster {
	if options.SleepDuration == 0 {
		options.SleepDuration = defaultSleepDuration
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &broadcaster{
		EventBroadcaster: record.NewBroadcaster(record.WithSleepDuration(options.SleepDuration)),
		options:          options,
		ctx:              ctx,
		cancel:           cancel,
	}
}

// StartRecordingToSink writes the broadcast events to sink after
// correlating them, as client-go's does.
func (b *broadcaster) StartRecordingToSink(sink record.EventSink) watch.Interface {
	correlator := NewCorrelator(b.options.Correlator)
	return b.StartEventWatcher(func(event *v1.Event) {
		b.recordToSink(sink, event, correlator)
	})
}

// Shutdown stops the broadcaster and gives up on events being retried.
func (b *broadcaster) Shutdown() {
	b.EventBroadcaster.Shutdown()
	b.cancel()
}

// recordToSink is client-go's: correlate, then write with up to 12 tries,
// the first pause randomised.
func (b *broadcaster) recordToSink(sink record.EventSink, event *v1.Event, correlator *Correlator) {
	eventCopy := *event // other watchers see the same event
	event = &eventCopy
	result, err := correlator.EventCorrelate(event)
	if err != nil {
		utilruntime.HandleErrorWithContext(b.ctx, err, "Correlating event")
	}
	if result.Skip {
		return
	}
	for tries := 1; ; tries++ {
		if recordEvent(b.ctx, sink, result.Event, result.Patch, result.Event.Count > 1, correlator) {
			return
		}
		if tries >= maxTriesPerEvent {
			klog.FromContext(b.ctx).Error(nil, "Unable to write event (retry limit exceeded!)", "event", event)
			return
		}
		delay := b.options.SleepDuration
		if tries == 1 {
			delay = time.Duration(float64(delay) * rand.Float64())
		}
		select {
		case <-b.ctx.Done():
			klog.FromContext(b.ctx).Error(nil, "Unable to write event (broadcaster is shut down)", "event", event)
			return
		case <-time.After(delay):
		}
	}
}

// recordEvent is client-go's: patch a repeated event (create it when the
// server lost it), create a new one; true when written or not worth
// retrying.
func recordEvent(ctx context.Context, sink record.EventSink, event *v1.Event, patch []byte, update bool, correlator *Correlator) bool {
	var written *v1.Event
	var err error
	if update {
		written, err = sink.Patch(event, patch)
	}
	if !update || util.IsKeyNotFoundError(err) {
		event.ResourceVersion = ""
		written, err = sink.Create(event)
	}
	if err == nil {
		correlator.UpdateState(written)
		return true
	}
	switch err.(type) {
	case *restclient.RequestConstructionError:
		klog.FromContext(ctx).Error(err, "Unable to construct event (will not retry!)", "event", event)
		return true
	case *apierrors.StatusError:
		if apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
			klog.FromContext(ctx).V(5).Info("Server rejected event (will not retry!)", "event", event, "err", err)
		} else {
			klog.FromContext(ctx).Error(err, "Server rejected event (will not retry!)", "event", event)
		}
		return true
	}
	klog.FromContext(ctx).Error(err, "Unable to write event (may retry after sleeping)", "event", event)
	return false
}
