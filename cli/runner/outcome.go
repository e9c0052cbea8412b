package runner

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Outcome is where a followed object ended.
type Outcome string

const (
	OutcomeRunning  Outcome = ""
	OutcomeComplete Outcome = "Complete"
	OutcomeFailed   Outcome = "Failed"
	// OutcomeDeleted: the object vanished before it finished.
	OutcomeDeleted Outcome = "Deleted"
)

// Condition is a status condition as the summary shows it.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Counts are the pod counters of a Job (or the summed child Jobs of a JobSet).
type Counts struct {
	Active      int64 `json:"active"`
	Ready       int64 `json:"ready"`
	Succeeded   int64 `json:"succeeded"`
	Failed      int64 `json:"failed"`
	Terminating int64 `json:"terminating"`
	Completions int64 `json:"completions"`
}

// ItemResult is the final state of one followed Job or JobSet.
type ItemResult struct {
	Kind             string        `json:"kind"`
	Namespace        string        `json:"namespace"`
	Name             string        `json:"name"`
	Outcome          Outcome       `json:"outcome"`
	Reason           string        `json:"reason,omitempty"`
	Message          string        `json:"message,omitempty"`
	Conditions       []Condition   `json:"conditions,omitempty"`
	Counts           Counts        `json:"counts"`
	Indexed          bool          `json:"indexed,omitempty"`
	CompletedIndexes string        `json:"completedIndexes,omitempty"`
	FailedIndexes    string        `json:"failedIndexes,omitempty"`
	Restarts         int64         `json:"restarts,omitempty"`
	Duration         time.Duration `json:"durationNanos"`
	FailedPods       []PodExit     `json:"failedPods,omitempty"`
}

// PodExit records how a container of a failed pod ended, or, with no
// Container, why the pod failed without a failed container (Evicted,
// DeadlineExceeded).
type PodExit struct {
	Pod       string `json:"pod"`
	Container string `json:"container,omitempty"`
	ExitCode  int32  `json:"exitCode"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
	// LastLogLines end the container's log, from its ContainerResult.
	LastLogLines []string `json:"lastLogLines,omitempty"`
}

// podExits lists the containers of pod that ended with a nonzero code,
// init containers first; for a failed pod none of whose containers did, the
// pod's own reason and message.
func podExits(pod *corev1.Pod) []PodExit {
	var exits []PodExit
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				exits = append(exits, PodExit{Pod: pod.Name, Container: cs.Name, ExitCode: t.ExitCode, Reason: t.Reason, Message: t.Message})
			}
		}
	}
	if len(exits) == 0 && pod.Status.Phase == corev1.PodFailed {
		exits = append(exits, PodExit{Pod: pod.Name, Reason: pod.Status.Reason, Message: pod.Status.Message})
	}
	return exits
}

// finishedCondition maps the kind's terminal condition types.
func terminalTypes(kind string) (complete, failed string) {
	if kind == JobSetGVK.Kind {
		return "Completed", "Failed"
	}
	return "Complete", "Failed"
}

// Evaluate reads the status of a Job, JobSet or Pod into an ItemResult;
// Outcome stays OutcomeRunning until a terminal condition is True (for a
// Pod: until its phase is Succeeded or Failed).
func Evaluate(obj *unstructured.Unstructured) ItemResult { return evaluate(obj) }

func evaluate(obj *unstructured.Unstructured) ItemResult {
	kind := obj.GetKind()
	if obj.GroupVersionKind() == PodGVK {
		return evaluatePod(obj)
	}
	res := ItemResult{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	completeType, failedType := terminalTypes(kind)
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		cond := Condition{Type: str(m["type"]), Status: str(m["status"]), Reason: str(m["reason"]), Message: str(m["message"])}
		res.Conditions = append(res.Conditions, cond)
		if cond.Status != "True" {
			continue
		}
		switch cond.Type {
		case completeType:
			res.Outcome, res.Reason, res.Message = OutcomeComplete, cond.Reason, cond.Message
		case failedType:
			res.Outcome, res.Reason, res.Message = OutcomeFailed, cond.Reason, cond.Message
		}
	}
	if kind == JobSetGVK.Kind {
		res.Restarts = nestedNum(obj, "status", "restarts")
		res.Counts = jobSetCounts(obj)
		return res
	}
	res.Counts = jobCounts(obj)
	mode, _, _ := unstructured.NestedString(obj.Object, "spec", "completionMode")
	res.Indexed = mode == "Indexed"
	res.CompletedIndexes, _, _ = unstructured.NestedString(obj.Object, "status", "completedIndexes")
	res.FailedIndexes, _, _ = unstructured.NestedString(obj.Object, "status", "failedIndexes")
	res.Duration = duration(obj)
	return res
}

// evaluatePod reads a bare Pod's phase: Succeeded is its completion, Failed
// its failure, with the pod's reason and message.
func evaluatePod(obj *unstructured.Unstructured) ItemResult {
	res := ItemResult{Kind: PodGVK.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Counts: Counts{Completions: 1}}
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &pod); err != nil {
		return res
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		res.Outcome, res.Counts.Succeeded = OutcomeComplete, 1
	case corev1.PodFailed:
		res.Outcome, res.Counts.Failed = OutcomeFailed, 1
		res.Reason, res.Message = pod.Status.Reason, pod.Status.Message
	case corev1.PodRunning:
		res.Counts.Active = 1
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			res.Counts.Ready = 1
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		res.Restarts += int64(cs.RestartCount)
	}
	if pod.Status.StartTime != nil && res.Outcome != OutcomeRunning {
		if end := lastFinish(&pod); !end.IsZero() {
			res.Duration = end.Sub(pod.Status.StartTime.Time)
		}
	}
	return res
}

// lastFinish is when the last container of a finished pod ended.
func lastFinish(pod *corev1.Pod) time.Time {
	var end time.Time
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.FinishedAt.After(end) {
			end = t.FinishedAt.Time
		}
	}
	return end
}

func jobCounts(obj *unstructured.Unstructured) Counts {
	var c Counts
	c.Active = nestedNum(obj, "status", "active")
	c.Ready = nestedNum(obj, "status", "ready")
	c.Succeeded = nestedNum(obj, "status", "succeeded")
	c.Failed = nestedNum(obj, "status", "failed")
	c.Terminating = nestedNum(obj, "status", "terminating")
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "completions"); found {
		c.Completions = nestedNum(obj, "spec", "completions")
	} else {
		c.Completions = -1 // work queue: complete when any pod succeeds and none is active
	}
	return c
}

func jobSetCounts(obj *unstructured.Unstructured) Counts {
	var c Counts
	statuses, _, _ := unstructured.NestedSlice(obj.Object, "status", "replicatedJobsStatus")
	for _, s := range statuses {
		m, ok := s.(map[string]any)
		if !ok {
			continue
		}
		c.Active += num(m["active"])
		c.Ready += num(m["ready"])
		c.Succeeded += num(m["succeeded"])
		c.Failed += num(m["failed"])
	}
	rjobs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "replicatedJobs")
	for _, r := range rjobs {
		if m, ok := r.(map[string]any); ok {
			replicas := num(m["replicas"])
			if replicas == 0 {
				replicas = 1
			}
			c.Completions += replicas
		}
	}
	return c
}

func duration(obj *unstructured.Unstructured) time.Duration {
	start, _, _ := unstructured.NestedString(obj.Object, "status", "startTime")
	end, _, _ := unstructured.NestedString(obj.Object, "status", "completionTime")
	s, err1 := time.Parse(time.RFC3339, start)
	e, err2 := time.Parse(time.RFC3339, end)
	if err1 != nil || err2 != nil {
		return 0
	}
	return e.Sub(s)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	case int:
		return int64(n)
	}
	return 0
}

// nestedNum reads an integer field whether it was decoded as int64 (API
// responses) or float64 (YAML/JSON manifests).
func nestedNum(obj *unstructured.Unstructured, fields ...string) int64 {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	return num(v)
}
