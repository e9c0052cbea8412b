package results

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// encodeJSON is json.Marshal(r), byte for byte. A node agent encodes one
// result per container attempt, and reflection over ObjectMeta and the spec
// was most of that cost, so results shaped as New builds them (metadata
// with only a name, namespace and labels) are written by hand; any other
// goes through encoding/json.
func encodeJSON(r *ContainerResult) ([]byte, error) {
	if !plainMeta(&r.ObjectMeta) {
		return json.Marshal(r)
	}
	b := make([]byte, 0, encodedSizeHint(r))
	b = append(b, '{')
	b = appendField(b, "kind", r.Kind, true)
	b = appendField(b, "apiVersion", r.APIVersion, true)
	b = append(b, `"metadata":{`...)
	m := &r.ObjectMeta
	b = appendField(b, "name", m.Name, true)
	b = appendField(b, "namespace", m.Namespace, true)
	if len(m.Labels) > 0 {
		b = appendLabels(b, m.Labels)
	}
	b = endObject(b)
	b = append(b, `,"spec":{`...)
	b = appendSpec(b, &r.Spec)
	b = append(b, '}', '}')
	return b, nil
}

// encodedSizeHint is about the encoded size of a plain result: the field
// names and punctuation (about 320 bytes when all are present) and the strings.
func encodedSizeHint(r *ContainerResult) int {
	n := 320 + len(r.Kind) + len(r.APIVersion) + len(r.Name) + len(r.Namespace)
	for k, v := range r.Labels {
		n += len(k) + len(v) + 6
	}
	s := &r.Spec
	return n + len(s.PodName) + len(s.PodUID) + len(s.NodeName) + len(s.JobName) + len(s.JobUID) + len(s.JobSetName) +
		len(s.ContainerName) + len(s.Reason) + len(s.Message) + len(s.LogTail)
}

// plainMeta tells whether m has no field but a name, namespace and labels.
func plainMeta(m *metav1.ObjectMeta) bool {
	//lint:ignore SA1019 a result that had one would encode it, so it must be checked.
	return m.GenerateName == "" && m.SelfLink == "" && m.UID == "" && m.ResourceVersion == "" &&
		m.Generation == 0 && m.CreationTimestamp.IsZero() && m.DeletionTimestamp == nil &&
		m.DeletionGracePeriodSeconds == nil && len(m.Annotations) == 0 && len(m.OwnerReferences) == 0 &&
		len(m.Finalizers) == 0 && len(m.ManagedFields) == 0
}

func appendSpec(b []byte, s *ContainerResultSpec) []byte {
	b = appendField(b, "podName", s.PodName, false)
	b = appendField(b, "podUID", s.PodUID, false)
	b = appendField(b, "nodeName", s.NodeName, true)
	b = appendField(b, "jobName", s.JobName, true)
	b = appendField(b, "jobUID", s.JobUID, true)
	if s.CompletionIndex != nil {
		b = strconv.AppendInt(append(b, `"completionIndex":`...), int64(*s.CompletionIndex), 10)
		b = append(b, ',')
	}
	b = appendField(b, "jobSetName", s.JobSetName, true)
	b = appendField(b, "containerName", s.ContainerName, false)
	if s.InitContainer {
		b = append(b, `"initContainer":true,`...)
	}
	b = strconv.AppendInt(append(b, `"attempt":`...), int64(s.Attempt), 10)
	b = strconv.AppendInt(append(b, `,"exitCode":`...), int64(s.ExitCode), 10)
	b = append(b, ',')
	if s.Signal != 0 {
		b = strconv.AppendInt(append(b, `"signal":`...), int64(s.Signal), 10)
		b = append(b, ',')
	}
	b = appendField(b, "reason", s.Reason, true)
	b = appendField(b, "message", s.Message, true)
	b = appendTime(append(b, `"startedAt":`...), s.StartedAt)
	b = appendTime(append(b, `,"finishedAt":`...), s.FinishedAt)
	if s.LogTail != "" {
		b = appendString(append(b, `,"logTail":`...), s.LogTail)
	}
	if s.LogTruncated {
		b = append(b, `,"logTruncated":true`...)
	}
	return b
}

// appendField appends `"name":"v",`; omitEmpty leaves out an empty v.
func appendField(b []byte, name, v string, omitEmpty bool) []byte {
	if omitEmpty && v == "" {
		return b
	}
	b = append(append(append(b, '"'), name...), `":`...)
	return append(appendString(b, v), ',')
}

// endObject closes an object whose last field left a trailing comma.
func endObject(b []byte) []byte {
	if b[len(b)-1] == ',' {
		b[len(b)-1] = '}'
		return b
	}
	return append(b, '}')
}

func appendLabels(b []byte, labels map[string]string) []byte {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys) // encoding/json sorts map keys
	b = append(b, `"labels":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendString(b, k), ':')
		b = appendString(b, labels[k])
	}
	return append(b, '}', ',')
}

// appendTime is metav1.Time's JSON: null when zero, else RFC 3339 in UTC.
func appendTime(b []byte, t metav1.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

// appendString quotes s as encoding/json does: HTML-safe, invalid UTF-8
// as U+FFFD, U+2028 and U+2029 escaped. Strings needing none of that (names,
// labels) are copied as they are.
func appendString(b []byte, s string) []byte {
	if plainString(s) {
		return append(append(append(b, '"'), s...), '"')
	}
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
