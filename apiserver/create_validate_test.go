package apiserver

import (
	"testing"

	"github.com/batchlet/batchlet/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Resources flagged ValidateChecksMeta fail Validate whenever the create's
// metadata checks fail, so skipping those checks after a pass loses nothing;
// a failing create still reports both lists.
func TestValidateChecksMetaCoversMetadataErrors(t *testing.T) {
	s := &Server{}
	res := registry.Pods()
	if !res.ValidateChecksMeta {
		t.Fatal("pods should be flagged")
	}
	for name, mutate := range map[string]func(*corev1.Pod){
		"bad name":         func(p *corev1.Pod) { p.Name = "Bad_Name" },
		"no namespace":     func(p *corev1.Pod) { p.Namespace = "" },
		"bad label key":    func(p *corev1.Pod) { p.Labels = map[string]string{"a/b/c": "x"} },
		"bad label value":  func(p *corev1.Pod) { p.Labels = map[string]string{"a": "-x-"} },
		"bad annotation":   func(p *corev1.Pod) { p.Annotations = map[string]string{"Bad Key": "v"} },
		"bad finalizer":    func(p *corev1.Pod) { p.Finalizers = []string{"not a finalizer"} },
		"bad owner":        func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "j"}} },
		"negative gen":     func(p *corev1.Pod) { p.Generation = -1 },
		"generateName bad": func(p *corev1.Pod) { p.GenerateName = "Bad_" },
	} {
		pod := testPod("p", "")
		pod.UID = "u"
		res.PrepareForCreate(pod)
		mutate(pod)
		meta := s.metaErrors(res, pod)
		if len(meta) == 0 {
			t.Fatalf("%s: no metadata error to test", name)
		}
		if len(res.Validate(pod)) == 0 {
			t.Errorf("%s: Validate passes a pod the metadata checks reject: %v", name, meta)
		}
		got := s.validateCreate(res, pod)
		want := append(meta, res.Validate(pod)...)
		if got.ToAggregate().Error() != want.ToAggregate().Error() || len(got) != len(want) {
			t.Errorf("%s: create errors\n got %v\nwant %v", name, got, want)
		}
	}
	valid := testPod("p", "")
	res.PrepareForCreate(valid)
	if errs := s.validateCreate(res, valid); len(errs) != 0 {
		t.Fatalf("valid pod rejected: %v", errs)
	}
}
