package workqueue

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, Version, Kind and Resource of the WorkQueue CRD.
const (
	Group    = "batchlet.dev"
	Version  = "v1"
	Kind     = "WorkQueue"
	Resource = "workqueues"
)

// GVR is where work queues are served.
var GVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}

// WorkQueue is the durable state of one Job's queue: the items (a snapshot
// of the source taken when the queue was made) and the progress.
type WorkQueue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WorkQueueSpec   `json:"spec"`
	Status            WorkQueueStatus `json:"status,omitempty"`
}

// WorkQueueSpec is what the queue hands out; it does not change.
type WorkQueueSpec struct {
	// JobName and JobUID name the Job whose pods lease the items.
	JobName string `json:"jobName"`
	JobUID  string `json:"jobUID"`
	// Source is the annotation's value the items were read from.
	Source string `json:"source"`
	// Items in the order they are leased.
	Items []string `json:"items"`
}

// WorkQueueStatus is the queue's progress.
type WorkQueueStatus struct {
	// Completed lists the indexes of completed items as ranges ("0-4,7").
	Completed      string `json:"completed,omitempty"`
	CompletedCount int32  `json:"completedCount"`
	// Leases are the items handed out and not completed yet.
	Leases []Lease `json:"leases,omitempty"`
	// LeaseCount counts the leases ever granted (it numbers them).
	LeaseCount int64 `json:"leaseCount,omitempty"`
	// Attempts[i] counts the leases item i was granted; empty until the
	// first lease.
	Attempts []int32 `json:"attempts,omitempty"`
	// Released counts the leases that went back to the queue.
	Released int32 `json:"released,omitempty"`
}

// Lease is one item handed to one pod.
type Lease struct {
	ID       string      `json:"id"`
	Item     int32       `json:"item"`
	Pod      string      `json:"pod"`
	PodUID   string      `json:"podUID"`
	LeasedAt metav1.Time `json:"leasedAt"`
}

// ToUnstructured converts q for a dynamic client, with apiVersion and kind.
func ToUnstructured(q *WorkQueue) (*unstructured.Unstructured, error) {
	q.APIVersion, q.Kind = Group+"/"+Version, Kind
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(q)
	if err != nil {
		return nil, fmt.Errorf("workqueue: convert %s: %w", q.Name, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// FromUnstructured converts a served object back.
func FromUnstructured(u *unstructured.Unstructured) (*WorkQueue, error) {
	q := &WorkQueue{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, q); err != nil {
		return nil, fmt.Errorf("workqueue: decode %s: %w", u.GetName(), err)
	}
	return q, nil
}
