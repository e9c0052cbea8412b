package results

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, Version, Kind and Resource of the results CRD.
const (
	Group    = "results.batchlet.dev"
	Version  = "v1"
	Kind     = "ContainerResult"
	Resource = "containerresults"
)

// GV is the results' group and version; GVR is where they are served.
var (
	GV  = schema.GroupVersion{Group: Group, Version: Version}
	GVR = GV.WithResource(Resource)
)

// DefaultLogTailBytes is how much of a container's log a result keeps
// unless configured otherwise (--results-log-tail).
const DefaultLogTailBytes = 16 << 10

// ContainerResult records one terminated container attempt. It has no
// owner: pod and Job garbage collection leave it, and only the results
// retention deletes it.
type ContainerResult struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ContainerResultSpec `json:"spec"`
}

// ContainerResultSpec is the recorded termination.
type ContainerResultSpec struct {
	PodName  string `json:"podName"`
	PodUID   string `json:"podUID"`
	NodeName string `json:"nodeName,omitempty"`
	// JobName and JobUID name the pod's controlling Job, if any.
	JobName         string `json:"jobName,omitempty"`
	JobUID          string `json:"jobUID,omitempty"`
	CompletionIndex *int32 `json:"completionIndex,omitempty"`
	JobSetName      string `json:"jobSetName,omitempty"`
	ContainerName   string `json:"containerName"`
	InitContainer   bool   `json:"initContainer,omitempty"`
	// Attempt is the container's restartCount when this attempt ran.
	Attempt    int32       `json:"attempt"`
	ExitCode   int32       `json:"exitCode"`
	Signal     int32       `json:"signal,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	Message    string      `json:"message,omitempty"`
	StartedAt  metav1.Time `json:"startedAt,omitempty"`
	FinishedAt metav1.Time `json:"finishedAt,omitempty"`
	// LogTail is the end of the attempt's log (stdout and stderr
	// interleaved), at most the configured number of bytes, starting at a
	// line boundary when cut.
	LogTail      string `json:"logTail,omitempty"`
	LogTruncated bool   `json:"logTruncated,omitempty"`
}

// Failed says whether the attempt ended unsuccessfully.
func (r *ContainerResult) Failed() bool { return r.Spec.ExitCode != 0 }

// ToUnstructured converts r for a dynamic client, with apiVersion and kind.
func ToUnstructured(r *ContainerResult) (*unstructured.Unstructured, error) {
	r.APIVersion, r.Kind = Group+"/"+Version, Kind
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r)
	if err != nil {
		return nil, fmt.Errorf("results: convert %s: %w", r.Name, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// FromUnstructured converts a served object back.
func FromUnstructured(u *unstructured.Unstructured) (*ContainerResult, error) {
	r := &ContainerResult{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r); err != nil {
		return nil, fmt.Errorf("results: decode %s: %w", u.GetName(), err)
	}
	return r, nil
}
