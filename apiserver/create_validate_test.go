package apiserver

import (
	"strings"
	"testing"

	"github.com/batchlet/batchlet/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Resources flagged ValidateChecksMeta fail Validate whenever the create's
// metadata checks fail, so skipping those checks loses nothing: a failing
// create reports Validate's errors, each once, with the message the two
// lists together make.
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
		both := append(meta, res.Validate(pod)...)
		if got.ToAggregate().Error() != both.ToAggregate().Error() || len(got) != len(res.Validate(pod)) {
			t.Errorf("%s: create errors\n got %v\nwant %v", name, got, res.Validate(pod))
		}
	}
	valid := testPod("p", "")
	res.PrepareForCreate(valid)
	if errs := s.validateCreate(res, valid); len(errs) != 0 {
		t.Fatalf("valid pod rejected: %v", errs)
	}
}

// The server compares pod specs once for the generation and validation:
// a forbidden spec change through a patch is still refused with upstream's
// message, an allowed one lands, and a metadata-only patch leaves the
// generation.
func TestPodSpecPatchValidatedOnce(t *testing.T) {
	env := newTestEnv(t)
	pods := env.client.CoreV1().Pods("default")
	created, err := pods.Create(env.ctx, testPod("p", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pods.Patch(env.ctx, "p", types.StrategicMergePatchType, []byte(`{"spec":{"hostname":"h"}}`), metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "spec: Forbidden: pod updates may not change fields other than") {
		t.Fatalf("forbidden spec change: %v", err)
	}
	out, err := pods.Patch(env.ctx, "p", types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"main","image":"other"}]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Spec.Containers[0].Image != "other" || out.Generation != created.Generation+1 {
		t.Fatalf("image %q generation %d (was %d)", out.Spec.Containers[0].Image, out.Generation, created.Generation)
	}
	out2, err := pods.Patch(env.ctx, "p", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out2.Generation != out.Generation || out2.Labels["x"] != "y" {
		t.Fatalf("metadata patch: generation %d (was %d), labels %v", out2.Generation, out.Generation, out2.Labels)
	}
}
