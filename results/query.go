package results

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
)

// Selector fields the CRD declares (selectableFields).
const (
	FieldJobName    = "spec.jobName"
	FieldJobSetName = "spec.jobSetName"
	FieldPodName    = "spec.podName"
)

// List returns the results in namespace whose field (FieldJobName, ...)
// equals value, ordered by Job, completion index, pod, container and
// attempt.
func List(ctx context.Context, dyn dynamic.Interface, namespace, field, value string) ([]*ContainerResult, error) {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector(field, value).String()}
	var out []*ContainerResult
	for {
		l, err := dyn.Resource(GVR).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", Resource, err)
		}
		for i := range l.Items {
			r, err := FromUnstructured(&l.Items[i])
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		if l.GetContinue() == "" {
			break
		}
		opts.Continue = l.GetContinue()
	}
	Sort(out)
	return out, nil
}

// Sort orders results by Job, completion index (none first), finish time,
// pod, container and attempt.
func Sort(rs []*ContainerResult) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := &rs[i].Spec, &rs[j].Spec
		if a.JobName != b.JobName {
			return a.JobName < b.JobName
		}
		if ai, bi := indexOrMinus(a.CompletionIndex), indexOrMinus(b.CompletionIndex); ai != bi {
			return ai < bi
		}
		if !a.FinishedAt.Equal(&b.FinishedAt) {
			return a.FinishedAt.Before(&b.FinishedAt)
		}
		if a.PodName != b.PodName {
			return a.PodName < b.PodName
		}
		if a.ContainerName != b.ContainerName {
			return a.ContainerName < b.ContainerName
		}
		return a.Attempt < b.Attempt
	})
}

func indexOrMinus(i *int32) int64 {
	if i == nil {
		return -1
	}
	return int64(*i)
}

// LastLines returns at most the last n lines of a log tail.
func LastLines(tail string, n int) []string {
	tail = strings.TrimRight(tail, "\n")
	if tail == "" || n <= 0 {
		return nil
	}
	lines := strings.Split(tail, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
