package registry

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// Events is core/v1 events. events.k8s.io/v1 events (EventsV1) are a view
// of the same store.
func Events() *Resource {
	return &Resource{
		GVR: corev1.SchemeGroupVersion.WithResource("events"), Kind: "Event", Singular: "event", Namespaced: true,
		ShortNames: []string{"ev"},
		New:        func() runtime.Object { return &corev1.Event{} },
		NewList:    func() runtime.Object { return &corev1.EventList{} },
		Fields: func(obj runtime.Object) fields.Set {
			ev := obj.(*corev1.Event)
			source := ev.Source.Component
			if source == "" {
				source = ev.ReportingController
			}
			return fields.Set{
				"involvedObject.kind":            ev.InvolvedObject.Kind,
				"involvedObject.namespace":       ev.InvolvedObject.Namespace,
				"involvedObject.name":            ev.InvolvedObject.Name,
				"involvedObject.uid":             string(ev.InvolvedObject.UID),
				"involvedObject.apiVersion":      ev.InvolvedObject.APIVersion,
				"involvedObject.resourceVersion": ev.InvolvedObject.ResourceVersion,
				"involvedObject.fieldPath":       ev.InvolvedObject.FieldPath,
				"reason":                         ev.Reason,
				"reportingComponent":             ev.ReportingController,
				"source":                         source,
				"type":                           ev.Type,
			}
		},
		Columns: []metav1.TableColumnDefinition{
			col("Last Seen", corev1.Event{}.SwaggerDoc()["lastTimestamp"]),
			col("Type", corev1.Event{}.SwaggerDoc()["type"]),
			col("Reason", corev1.Event{}.SwaggerDoc()["reason"]),
			col("Object", corev1.Event{}.SwaggerDoc()["involvedObject"]),
			wideCol("Subobject", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]),
			wideCol("Source", corev1.Event{}.SwaggerDoc()["source"]),
			col("Message", corev1.Event{}.SwaggerDoc()["message"]),
			wideCol("First Seen", corev1.Event{}.SwaggerDoc()["firstTimestamp"]),
			wideCol("Count", corev1.Event{}.SwaggerDoc()["count"]),
			{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: objectMetaDoc["name"]},
		},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow { return eventRow(obj.(*corev1.Event), now) },
	}
}

func eventRow(ev *corev1.Event, now time.Time) metav1.TableRow {
	first := since(ev.FirstTimestamp, now)
	if ev.FirstTimestamp.IsZero() {
		first = microSince(ev.EventTime, now)
	}
	last := since(ev.LastTimestamp, now)
	if ev.LastTimestamp.IsZero() {
		last = first
	}
	count := ev.Count
	if ev.Series != nil {
		last = microSince(ev.Series.LastObservedTime, now)
		count = ev.Series.Count
	} else if count == 0 {
		count = 1
	}
	target := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		target += "/" + ev.InvolvedObject.Name
	}
	component, instance := ev.Source.Component, ev.Source.Host
	if component == "" {
		component = ev.ReportingController
	}
	if instance == "" {
		instance = ev.ReportingInstance
	}
	source := component
	if instance != "" {
		source += ", " + instance
	}
	return metav1.TableRow{Cells: []interface{}{last, ev.Type, ev.Reason, target, ev.InvolvedObject.FieldPath, source,
		strings.TrimSpace(ev.Message), first, int64(count), ev.Name}}
}

// EventsV1 is events.k8s.io/v1 events.
func EventsV1() *Resource {
	return &Resource{
		GVR: eventsv1.SchemeGroupVersion.WithResource("events"), Kind: "Event", Singular: "event", Namespaced: true,
		ShortNames: []string{"ev"},
		New:        func() runtime.Object { return &eventsv1.Event{} },
		NewList:    func() runtime.Object { return &eventsv1.EventList{} },
		Columns:    Events().Columns,
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow {
			return eventRow(eventToCore(obj.(*eventsv1.Event)), now)
		},
		StorageGVK: corev1.SchemeGroupVersion.WithKind("Event"), StorageResource: "events",
		StorageNew:  func() runtime.Object { return &corev1.Event{} },
		ToStorage:   func(obj runtime.Object) runtime.Object { return eventToCore(obj.(*eventsv1.Event)) },
		FromStorage: func(obj runtime.Object) runtime.Object { return eventFromCore(obj.(*corev1.Event)) },
		Fields: func(obj runtime.Object) fields.Set {
			ev := obj.(*eventsv1.Event)
			return fields.Set{
				"regarding.kind":      ev.Regarding.Kind,
				"regarding.namespace": ev.Regarding.Namespace,
				"regarding.name":      ev.Regarding.Name,
				"regarding.uid":       string(ev.Regarding.UID),
				"reason":              ev.Reason,
				"reportingController": ev.ReportingController,
				"type":                ev.Type,
			}
		},
	}
}

// eventToCore converts an events.k8s.io/v1 Event to its core/v1 form, field
// for field as kube-apiserver does.
func eventToCore(in *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta: in.ObjectMeta, InvolvedObject: in.Regarding, Related: in.Related, Reason: in.Reason, Message: in.Note,
		Source: in.DeprecatedSource, FirstTimestamp: in.DeprecatedFirstTimestamp, LastTimestamp: in.DeprecatedLastTimestamp,
		Count: in.DeprecatedCount, Type: in.Type, EventTime: in.EventTime, Action: in.Action,
		ReportingController: in.ReportingController, ReportingInstance: in.ReportingInstance,
	}
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}

func eventFromCore(in *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta: in.ObjectMeta, Regarding: in.InvolvedObject, Related: in.Related, Reason: in.Reason, Note: in.Message,
		DeprecatedSource: in.Source, DeprecatedFirstTimestamp: in.FirstTimestamp, DeprecatedLastTimestamp: in.LastTimestamp,
		DeprecatedCount: in.Count, Type: in.Type, EventTime: in.EventTime, Action: in.Action,
		ReportingController: in.ReportingController, ReportingInstance: in.ReportingInstance,
	}
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}
