// Package controllerctx is the one contract batchlet's controllers share,
// as kube-controller-manager's ControllerContext: the Context every
// controller is built from (clients, shared informer factories, clock,
// logger, event recorders, metrics registerer), the Controller interface
// they all run by, and the Registration that names one in a table. It
// imports no controller, so every controller package can import it.
package controllerctx

import (
	"context"
	"log/slog"

	"github.com/batchlet/batchlet/controller/eventrecord"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	jobsetclient "sigs.k8s.io/jobset/client-go/clientset/versioned"
	jobsetinformers "sigs.k8s.io/jobset/client-go/informers/externalversions"
)

// Context is what a controller is built from. The informer factories are
// shared: a controller's constructor registers the informers and handlers
// it needs, and whoever runs the controllers starts the factories after
// every constructor ran.
type Context struct {
	// Client reaches the core and batch APIs.
	Client kubernetes.Interface
	// JobSetClient and JobSetInformers are the typed jobset.x-k8s.io
	// clientset and its shared informer factory.
	JobSetClient    jobsetclient.Interface
	JobSetInformers jobsetinformers.SharedInformerFactory
	// Metadata and MetadataInformers see any resource's object metadata.
	Metadata          metadata.Interface
	MetadataInformers metadatainformer.SharedInformerFactory
	// Informers is the shared factory of Client's typed informers.
	Informers informers.SharedInformerFactory

	// RootCA is the CA bundle (PEM) that verifies the API, which the root
	// CA publisher puts in every namespace as kube-root-ca.crt.
	RootCA []byte

	// Clock drives every time decision and the work queues' delays.
	Clock clock.WithTicker
	// Logger receives structured logs.
	Logger *slog.Logger
	// Registerer receives the controllers' metrics; nil skips them.
	Registerer prometheus.Registerer
	// Recorder, when set, records every controller's core/v1 events (tests
	// pass a record.FakeRecorder). When nil each controller gets its own
	// broadcaster over Client, as upstream's controllers each have one.
	Recorder record.EventRecorder
}

// Controller is the contract every controller runs by: Run starts its
// workers (how many, where that means anything) and blocks until ctx ends.
type Controller interface {
	Run(ctx context.Context, workers int) error
}

// InitFunc builds a controller from the shared Context, registering its
// informers and event handlers.
type InitFunc func(Context) (Controller, error)

// Init adapts a constructor New(Context) to an InitFunc.
func Init[C Controller](newController func(Context) (C, error)) InitFunc {
	return InitWith(func(cc Context, _ struct{}) (C, error) { return newController(cc) }, struct{}{})
}

// InitWith adapts a constructor New(Context, Options) to an InitFunc that
// passes opts. A failed constructor yields a nil Controller, not a typed
// nil.
func InitWith[C Controller, O any](newController func(Context, O) (C, error), opts O) InitFunc {
	return func(cc Context) (Controller, error) {
		c, err := newController(cc, opts)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// Registration is one row of a controller table: the name
// `--controllers` takes, how to build the controller, how many workers it
// runs with, and whether it runs when no list is given.
type Registration struct {
	Name             string
	Init             InitFunc
	Workers          int
	EnabledByDefault bool
}

// EventRecorder returns the recorder for component's core/v1 events,
// naming objects by scheme, and the broadcaster behind it, which the
// controller starts in Run (StartEvents). The broadcaster writes what
// client-go's would, correlating more cheaply (package eventrecord). With c.Recorder set it
// returns that and no broadcaster.
func (c Context) EventRecorder(scheme *runtime.Scheme, component string) (record.EventRecorder, record.EventBroadcaster) {
	if c.Recorder != nil {
		return c.Recorder, nil
	}
	b := eventrecord.NewBroadcaster(eventrecord.Options{})
	return b.NewRecorder(scheme, corev1.EventSource{Component: component}), b
}

// StartEvents writes b's events to the API through client and returns the
// function that stops it; a nil b (an injected recorder) does nothing.
func StartEvents(b record.EventBroadcaster, client kubernetes.Interface) (stop func()) {
	if b == nil {
		return func() {}
	}
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b.Shutdown
}

// WithDefaults fills what a test or tool may leave out: the real clock
// and a logger that discards.
func (c Context) WithDefaults() Context {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
