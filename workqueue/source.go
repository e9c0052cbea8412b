package workqueue

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Annotation opts a Job's pods into a work queue; it goes on the pod
// template (spec.template.metadata.annotations), so every pod carries it.
const Annotation = "batchlet.dev/work-queue"

// EnvURL is the variable that gives a pod its queue's URL.
const EnvURL = "BATCHLET_QUEUE_URL"

// Source is where a queue's items come from.
type Source struct {
	ConfigMap string
	// Key, when set, holds one item per line; otherwise every key is an
	// item (its value), in key order.
	Key string
}

func (s Source) String() string {
	if s.Key == "" {
		return "configmap/" + s.ConfigMap
	}
	return "configmap/" + s.ConfigMap + "/" + s.Key
}

// ParseSource reads the annotation's value.
func ParseSource(v string) (Source, error) {
	parts := strings.Split(v, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != "configmap" {
		return Source{}, fmt.Errorf("annotation %s=%q: want configmap/NAME (one item per key) or configmap/NAME/KEY (one item per line)", Annotation, v)
	}
	s := Source{ConfigMap: parts[1]}
	if errs := validation.IsDNS1123Subdomain(s.ConfigMap); len(errs) > 0 {
		return Source{}, fmt.Errorf("annotation %s=%q: ConfigMap name: %s", Annotation, v, strings.Join(errs, "; "))
	}
	if len(parts) == 3 {
		s.Key = parts[2]
		if errs := validation.IsConfigMapKey(s.Key); len(errs) > 0 {
			return Source{}, fmt.Errorf("annotation %s=%q: key: %s", Annotation, v, strings.Join(errs, "; "))
		}
	}
	return s, nil
}

// Items reads the source's items from cm.
func (s Source) Items(cm *corev1.ConfigMap) ([]string, error) {
	if s.Key == "" {
		keys := make([]string, 0, len(cm.Data))
		for k := range cm.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		items := make([]string, 0, len(keys))
		for _, k := range keys {
			items = append(items, cm.Data[k])
		}
		return items, nil
	}
	data, ok := cm.Data[s.Key]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s has no key %q", cm.Namespace, cm.Name, s.Key)
	}
	return Lines(data), nil
}

// Lines splits a file's text into items: one per non-empty line, without
// the line end.
func Lines(text string) []string {
	items := []string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) != "" {
			items = append(items, line)
		}
	}
	return items
}
