package jobset

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
)

// eventAction is the action upstream JobSet gives every event.
const eventAction = "Reconciling"

// newEventRecorder records events the way upstream JobSet v0.12 does:
// controller-runtime's GetEventRecorder, i.e. client-go's events.k8s.io/v1
// broadcaster (tools/events), reporting controller "jobset", action
// "Reconciling". That broadcaster folds a repeat into the first event's
// series only when it is isomorphic, and its key holds the regarding
// object's reference with its resourceVersion: a JobSet changes version
// between two restarts, so each restart's FailurePolicy_*, Restart*Action
// and JobsReady are Events of their own with no count (count 1 in
// `kubectl get events`), where client-go's core/v1 recorder (tools/record,
// which the Job controller keeps, as kube-controller-manager does) would
// aggregate them into one Event with count N.
func newEventRecorder(kube kubernetes.Interface) (events.EventBroadcaster, EventRecorder) {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
	return b, actionRecorder{b.NewRecorder(eventScheme(), eventComponent)}
}

// actionRecorder adapts an events.k8s.io recorder to EventRecorder.
type actionRecorder struct{ rec events.EventRecorder }

// Eventf records one event about object with upstream's action.
func (r actionRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.rec.Eventf(object, nil, eventtype, reason, eventAction, messageFmt, args...)
}
