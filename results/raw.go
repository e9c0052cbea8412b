package results

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// decodedJSON is the JSON object a strict decode of encodeJSON(r) gives
// (sigs.k8s.io/json: strings, int64 numbers, bools, nil for null), built
// without encoding and decoding: an API server in the same process takes
// it as the body of the create. ok is false for a result encodeJSON writes
// through encoding/json (metadata beyond a name, namespace and labels) and
// for label keys of invalid UTF-8: such a result is sent as JSON.
func decodedJSON(r *ContainerResult) (raw map[string]interface{}, ok bool) {
	if !plainMeta(&r.ObjectMeta) || !validKeys(r.Labels) {
		return nil, false
	}
	meta := map[string]interface{}{"name": jsonString(r.Name), "namespace": jsonString(r.Namespace)}
	if r.Name == "" {
		delete(meta, "name")
	}
	if r.Namespace == "" {
		delete(meta, "namespace")
	}
	if len(r.Labels) > 0 {
		labels := make(map[string]interface{}, len(r.Labels))
		for k, v := range r.Labels {
			labels[k] = jsonString(v)
		}
		meta["labels"] = labels
	}
	raw = map[string]interface{}{"metadata": meta, "spec": decodedSpec(&r.Spec)}
	if r.Kind != "" {
		raw["kind"] = jsonString(r.Kind)
	}
	if r.APIVersion != "" {
		raw["apiVersion"] = jsonString(r.APIVersion)
	}
	return raw, true
}

// validKeys tells whether no label key is invalid UTF-8: two such keys
// could encode alike, and the strict decode of a duplicate key fails.
func validKeys(labels map[string]string) bool {
	for k := range labels {
		if !utf8.ValidString(k) {
			return false
		}
	}
	return true
}

// decodedSpec is appendSpec's object decoded.
func decodedSpec(s *ContainerResultSpec) map[string]interface{} {
	m := make(map[string]interface{}, 16)
	m["podName"] = jsonString(s.PodName)
	m["podUID"] = jsonString(s.PodUID)
	setNonEmpty(m, "nodeName", s.NodeName)
	setNonEmpty(m, "jobName", s.JobName)
	setNonEmpty(m, "jobUID", s.JobUID)
	if s.CompletionIndex != nil {
		m["completionIndex"] = int64(*s.CompletionIndex)
	}
	setNonEmpty(m, "jobSetName", s.JobSetName)
	m["containerName"] = jsonString(s.ContainerName)
	if s.InitContainer {
		m["initContainer"] = true
	}
	m["attempt"] = int64(s.Attempt)
	m["exitCode"] = int64(s.ExitCode)
	if s.Signal != 0 {
		m["signal"] = int64(s.Signal)
	}
	setNonEmpty(m, "reason", s.Reason)
	setNonEmpty(m, "message", s.Message)
	m["startedAt"] = decodedTime(s.StartedAt)
	m["finishedAt"] = decodedTime(s.FinishedAt)
	setNonEmpty(m, "logTail", s.LogTail)
	if s.LogTruncated {
		m["logTruncated"] = true
	}
	return m
}

func setNonEmpty(m map[string]interface{}, key, v string) {
	if v != "" {
		m[key] = jsonString(v)
	}
}

// decodedTime is appendTime's value decoded: nil for null.
func decodedTime(t metav1.Time) interface{} {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

// jsonString is s after encoding and decoding: encoding/json writes each
// byte of invalid UTF-8 as U+FFFD. Valid strings are s itself.
func jsonString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	q, _ := json.Marshal(s) // a string always encodes
	var out string
	_ = json.Unmarshal(q, &out) // and decodes
	return out
}
