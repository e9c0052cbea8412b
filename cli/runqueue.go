package cli

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/batchlet/batchlet/workqueue"
)

// queueFileKey is the key of the ConfigMap `run --queue-file` makes.
const queueFileKey = "items"

// withQueueFile adds to a manifest a ConfigMap holding file (one item per
// non-empty line) and points every Job's pod template at it with the
// work-queue annotation, replacing one the template had.
func withQueueFile(objs []*unstructured.Unstructured, file string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--queue-file: %w", err)
	}
	var jobs []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Job" && o.GroupVersionKind().Group == "batch" {
			jobs = append(jobs, o)
		}
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("--queue-file: the manifest has no Job to give the queue to")
	}
	name := jobs[0].GetName()
	if name == "" {
		return nil, fmt.Errorf("--queue-file: the Job needs metadata.name (the queue's ConfigMap is named after it)")
	}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name + "-queue"},
		"data":     map[string]any{queueFileKey: string(data)},
	}}
	if ns := jobs[0].GetNamespace(); ns != "" {
		cm.SetNamespace(ns)
	}
	source := workqueue.Source{ConfigMap: cm.GetName(), Key: queueFileKey}.String()
	for _, j := range jobs {
		if err := unstructured.SetNestedField(j.Object, source, "spec", "template", "metadata", "annotations", workqueue.Annotation); err != nil {
			return nil, fmt.Errorf("--queue-file: annotate Job %s: %w", j.GetName(), err)
		}
	}
	return append([]*unstructured.Unstructured{cm}, objs...), nil
}
