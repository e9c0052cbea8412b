package patch

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"
	kjson "sigs.k8s.io/json"
)

// richPod is a running Job pod as stored: labels, annotations, owner,
// finalizers, and a full status.
func richPod() *corev1.Pod {
	start := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: "n1", RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	pod.ResourceVersion = "7"
	pod.UID = "u1"
	pod.CreationTimestamp = start
	pod.Labels = map[string]string{"a": "1", "b": "2"}
	pod.Annotations = map[string]string{"batch.kubernetes.io/job-completion-index": "3"}
	pod.Finalizers = []string{"batch.kubernetes.io/job-tracking", "other"}
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "ju", Controller: ptr.To(true)}}
	pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	pod.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "r", Message: "m"}},
		HostIP:     "10.0.0.1",
		HostIPs:    []corev1.HostIP{{IP: "10.0.0.1"}},
		PodIP:      "10.1.0.1",
		PodIPs:     []corev1.PodIP{{IP: "10.1.0.1"}},
		StartTime:  &start,
		QOSClass:   corev1.PodQOSBestEffort,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Ready: true, Image: "busybox", ImageID: "id",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}}},
	}
	return pod
}

// jsonPathPatch is the reference: strategic merge of the served JSON.
func jsonPathPatch(t *testing.T, cur *corev1.Pod, patch string) *corev1.Pod {
	t.Helper()
	orig, err := json.Marshal(cur)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := strategicpatch.StrategicMergePatch(orig, []byte(patch), &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{}
	if err := json.Unmarshal(patched, want); err != nil {
		t.Fatal(err)
	}
	want.ResourceVersion = ""
	return want
}

// The field-by-field merge gives what patching the JSON gives, for the
// patches the agent and the Job controller send and for the directives it
// must hand to the general merge.
func TestTypedStrategicPatchMatchesJSONPath(t *testing.T) {
	res := registry.Pods()
	patches := map[string]string{
		"agent status": `{"metadata":{"uid":"u1"},"status":{"phase":"Succeeded","conditions":[{"type":"Ready","status":"False","lastProbeTime":null,"lastTransitionTime":"2026-01-02T03:04:06Z","reason":"PodCompleted","message":null}],` +
			`"hostIP":"10.0.0.1","hostIPs":[{"ip":"10.0.0.1"}],"podIP":"10.1.0.1","podIPs":[{"ip":"10.1.0.1"}],"startTime":"2026-01-02T03:04:05Z","qosClass":"BestEffort",` +
			`"containerStatuses":[{"name":"main","state":{"terminated":{"exitCode":0,"reason":"Completed","startedAt":"2026-01-02T03:04:05Z","finishedAt":"2026-01-02T03:04:06Z"}},"ready":false,"restartCount":0,"image":"busybox","imageID":"id","started":false}]}}`,
		"finalizer removal":          `{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.kubernetes.io/job-tracking"]}}`,
		"finalizer removal, two":     `{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.kubernetes.io/job-tracking","other"]}}`,
		"finalizer removal, none":    `{"metadata":{"$deleteFromPrimitiveList/finalizers":[]}}`,
		"finalizer removal, absent":  `{"metadata":{"$deleteFromPrimitiveList/finalizers":["nope"]}}`,
		"finalizer removal, null":    `{"metadata":{"$deleteFromPrimitiveList/finalizers":null}}`,
		"finalizer removal, scalar":  `{"metadata":{"$deleteFromPrimitiveList/finalizers":"other"}}`,
		"finalizers set order":       `{"metadata":{"$setElementOrder/finalizers":["other","batch.kubernetes.io/job-tracking"],"finalizers":["other"]}}`,
		"finalizers merge":           `{"metadata":{"finalizers":["other","new"]}}`,
		"label delete":               `{"metadata":{"labels":{"a":null,"c":"3"}}}`,
		"labels replaced":            `{"metadata":{"labels":{"$patch":"replace","z":"9"}}}`,
		"labels null":                `{"metadata":{"labels":null}}`,
		"owner merge by uid":         `{"metadata":{"ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"j","uid":"ju","blockOwnerDeletion":true}]}}`,
		"owner delete":               `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"ju"}]}}`,
		"condition merge by type":    `{"status":{"conditions":[{"type":"Ready","status":"True","reason":null}]}}`,
		"condition set order":        `{"status":{"$setElementOrder/conditions":[{"type":"Ready"},{"type":"PodScheduled"}],"conditions":[{"type":"Ready","status":"True"}]}}`,
		"conditions replaced":        `{"status":{"conditions":[{"$patch":"replace"},{"type":"Ready","status":"True"}]}}`,
		"container status replaced":  `{"status":{"containerStatuses":[{"name":"main","ready":false,"restartCount":2,"image":"x","imageID":""}]}}`,
		"container status with null": `{"status":{"containerStatuses":[{"name":"main","ready":false,"restartCount":1,"image":"x","imageID":"","state":null}]}}`,
		"status null fields":         `{"status":{"startTime":null,"podIPs":null,"message":null}}`,
		"status replaced":            `{"status":{"$patch":"replace","phase":"Failed"}}`,
		"status retain keys":         `{"status":{"$retainKeys":["phase"],"phase":"Failed"}}`,
		"nested struct":              `{"spec":{"securityContext":{"runAsUser":5},"dnsConfig":{"nameservers":["1.1.1.1"]}}}`,
		"int and bool":               `{"spec":{"activeDeadlineSeconds":60,"hostNetwork":true,"enableServiceLinks":false}}`,
		"container by name":          `{"spec":{"containers":[{"name":"main","image":"other"}]}}`,
		"resource quantity":          `{"spec":{"containers":[{"name":"main","resources":{"limits":{"cpu":"500m","memory":"1Gi"}}}]}}`,
		"rv as precondition":         `{"metadata":{"resourceVersion":"7"},"status":{"message":"x"}}`,
		"empty objects":              `{"metadata":{},"status":{}}`,
		"escaped strings":            `{"status":{"message":"a\"b\u00e9\n","reason":"R\\"}}`,
		"invalid utf-8":              "{\"status\":{\"message\":\"a\xffb\"}}",
		"pretty printed":             "{\n \"metadata\" : { \"labels\" : { \"a\" : null } ,\n \"finalizers\" : [ \"x\" ] },\n\t\"status\": {\"phase\" : \"Failed\", \"conditions\": [ ] , \"containerStatuses\" : [ {\"name\": \"main\" , \"restartCount\": 3 } ] } }",
		"tolerations replaced":       `{"spec":{"tolerations":[{"key":"k","operator":"Exists"}]}}`,
		"same conditions resent":     `{"status":{"conditions":[{"type":"PodScheduled","status":"True","reason":null},{"type":"Ready","status":"False","reason":"r","message":"m"}]}}`,
		"conditions reordered":       `{"status":{"conditions":[{"type":"Ready","status":"False","reason":"r","message":"m"},{"type":"PodScheduled","status":"True"}]}}`,
		"ips resent, one more":       `{"status":{"podIPs":[{"ip":"10.1.0.1"},{"ip":"fd00::1"}]}}`,
		"ips, new one only":          `{"status":{"podIPs":[{"ip":"fd00::1"}],"hostIPs":[]}}`,
		"condition added first":      `{"status":{"conditions":[{"type":"Initialized","status":"True","lastTransitionTime":"2026-01-02T03:04:05Z"},{"type":"Ready","status":"True","message":null}]}}`,
		"condition into empty list":  `{"status":{"containerStatuses":null,"initContainerStatuses":[],"conditions":[]}}`,
		"empty list replaces":        `{"status":{"containerStatuses":[]}}`,
		"scalar for pointer time":    `{"status":{"startTime":"2026-02-02T03:04:05Z"}}`,
	}
	for name, patch := range patches {
		t.Run(name, func(t *testing.T) {
			cur := richPod()
			before := cur.DeepCopy()
			got, ok := strategicPatchObject(res, cur, []byte(patch))
			if !ok {
				t.Fatal("typed path refused a patch the JSON path applies")
			}
			want := jsonPathPatch(t, before, patch)
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(want)
			if !equality.Semantic.DeepEqual(got, want) || !bytes.Equal(gotJSON, wantJSON) {
				t.Fatalf("typed path differs:\n got %s\nwant %s", gotJSON, wantJSON)
			}
			if !equality.Semantic.DeepEqual(cur, before) {
				t.Fatal("patching changed the current object")
			}
		})
	}
}

// The Job controller's finalizer removal drops every occurrence, as
// strategic merge's deleteFromPrimitiveList does.
func TestTypedFinalizerRemovalDropsDuplicates(t *testing.T) {
	cur := richPod()
	cur.Finalizers = []string{"batch.kubernetes.io/job-tracking", "other", "batch.kubernetes.io/job-tracking"}
	patch := `{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.kubernetes.io/job-tracking"]}}`
	got, ok := strategicPatchObject(registry.Pods(), cur, []byte(patch))
	if !ok {
		t.Fatal("typed path refused the finalizer removal")
	}
	want := jsonPathPatch(t, cur, patch)
	if fs := got.(*corev1.Pod).Finalizers; !equality.Semantic.DeepEqual(fs, want.Finalizers) || len(fs) != 1 || fs[0] != "other" {
		t.Fatalf("finalizers %q, want %q", fs, want.Finalizers)
	}
}

// Resending a keyed list the pod holds changes nothing, unless its keys
// repeat (then the general merge decides, as for the JSON path).
func TestTypedResentListWithRepeatedKeys(t *testing.T) {
	cur := richPod()
	cur.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	patch := `{"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Ready","status":"False"}]}}`
	got, ok := strategicPatchObject(registry.Pods(), cur, []byte(patch))
	if !ok {
		t.Fatal("typed path refused")
	}
	want := jsonPathPatch(t, cur, patch)
	if !equality.Semantic.DeepEqual(got.(*corev1.Pod).Status.Conditions, want.Status.Conditions) {
		t.Fatalf("conditions %+v, want %+v", got.(*corev1.Pod).Status.Conditions, want.Status.Conditions)
	}
}

// Keyed lists (conditions by type) merge in the JSON path's order however
// the patch names, skips, adds and reorders elements.
func TestTypedKeyedListOrderMatchesJSONPath(t *testing.T) {
	conds := func(types ...string) string {
		out := ""
		for i, c := range types {
			if i > 0 {
				out += ","
			}
			out += `{"type":"` + c + `","status":"True","reason":"p` + c + `"}`
		}
		return `{"status":{"conditions":[` + out + `]}}`
	}
	patches := []string{
		conds(), conds("A"), conds("D", "A"), conds("C", "E", "A"), conds("E"), conds("E", "F"),
		conds("B", "D"), conds("D", "C", "B", "A"), conds("E", "B", "F", "D"), conds("A", "B", "C", "D", "E"),
	}
	for _, patch := range patches {
		cur := richPod()
		cur.Status.Conditions = nil
		for _, c := range []string{"A", "B", "C", "D"} {
			cur.Status.Conditions = append(cur.Status.Conditions, corev1.PodCondition{Type: corev1.PodConditionType(c), Status: corev1.ConditionFalse, Message: "m" + c})
		}
		got, ok := strategicPatchObject(registry.Pods(), cur, []byte(patch))
		if !ok {
			t.Fatalf("%s: typed path refused", patch)
		}
		want := jsonPathPatch(t, cur, patch)
		if !equality.Semantic.DeepEqual(got.(*corev1.Pod).Status.Conditions, want.Status.Conditions) {
			t.Errorf("%s:\n got %+v\nwant %+v", patch, got.(*corev1.Pod).Status.Conditions, want.Status.Conditions)
		}
	}
}

// Patches the JSON path must answer (unknown or mistyped fields, at any
// depth) are refused, so the client gets upstream's error.
func TestTypedStrategicPatchRefusesWhatJSONPathReports(t *testing.T) {
	res := registry.Pods()
	for name, patch := range map[string]string{
		"unknown status field":       `{"status":{"phaze":"Running"}}`,
		"unknown nested field":       `{"status":{"containerStatuses":[{"name":"main","readdy":true}]}}`,
		"unknown condition field":    `{"status":{"conditions":[{"type":"Ready","statuz":"True"}]}}`,
		"unknown in nested struct":   `{"spec":{"securityContext":{"runAsUzer":5}}}`,
		"string for int":             `{"spec":{"activeDeadlineSeconds":"60"}}`,
		"int for string":             `{"status":{"phase":3}}`,
		"unknown directive":          `{"metadata":{"$foo":1}}`,
		"removal from non-list":      `{"metadata":{"$deleteFromPrimitiveList/name":["p"]}}`,
		"removal, mixed types":       `{"metadata":{"$deleteFromPrimitiveList/finalizers":["other",1]}}`,
		"removal from unknown list":  `{"metadata":{"$deleteFromPrimitiveList/finalizerz":["other"]}}`,
		"directive in replaced list": `{"status":{"containerStatuses":[{"$patch":"replace","name":"main"}]}}`,
		"condition without type":     `{"status":{"conditions":[{"status":"True"}]}}`,
		"condition type not string":  `{"status":{"conditions":[{"type":5,"status":"True"}]}}`,
		"int32 overflow":             `{"status":{"containerStatuses":[{"name":"main","restartCount":99999999999}]}}`,
		"duplicate nested field":     `{"status":{"containerStatuses":[{"name":"main","name":"x"}]}}`,
		"duplicate in object":        `{"metadata":{"labels":{"a":"1","a":"2"}}}`,
	} {
		cur := richPod()
		if got, ok := strategicPatchObject(res, cur, []byte(patch)); ok {
			// A refusal is only required where the JSON path fails or warns.
			orig, _ := json.Marshal(cur)
			patched, err := strategicpatch.StrategicMergePatch(orig, []byte(patch), &corev1.Pod{})
			if err == nil {
				want := &corev1.Pod{}
				if strictErrs, err := strictDecodePod(patched, want); err == nil && len(strictErrs) == 0 {
					want.ResourceVersion = ""
					if equality.Semantic.DeepEqual(got, want) {
						continue
					}
				}
			}
			t.Errorf("%s: typed path took a patch the JSON path reports", name)
		}
	}
}

func strictDecodePod(data []byte, pod *corev1.Pod) ([]error, error) {
	return kjson.UnmarshalStrict(data, pod)
}

// BenchmarkStrategicPatchObject times the typed merge of the agent's status
// patch and the Job controller's finalizer removal on a running Job pod.
func BenchmarkStrategicPatchObject(b *testing.B) {
	res := registry.Pods()
	cur := richPod()
	for name, patch := range map[string]string{
		"status":    `{"metadata":{"uid":"u1"},"status":{"phase":"Succeeded","conditions":[{"type":"Ready","status":"False","lastProbeTime":null,"lastTransitionTime":"2026-01-02T03:04:06Z","reason":"PodCompleted","message":null}],"hostIP":"10.0.0.1","hostIPs":[{"ip":"10.0.0.1"}],"podIP":"10.1.0.1","podIPs":[{"ip":"10.1.0.1"}],"startTime":"2026-01-02T03:04:05Z","qosClass":"BestEffort","containerStatuses":[{"name":"main","state":{"terminated":{"exitCode":0,"reason":"Completed","startedAt":"2026-01-02T03:04:05Z","finishedAt":"2026-01-02T03:04:06Z"}},"ready":false,"restartCount":0,"image":"busybox","imageID":"id","started":false}]}}`,
		"finalizer": `{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.kubernetes.io/job-tracking"]}}`,
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, ok := strategicPatchObject(res, cur, []byte(patch)); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}

// decodeRawObject splits valid JSON objects as the JSON decoder does, and
// refuses what it cannot split exactly.
func TestDecodeRawObject(t *testing.T) {
	for _, in := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"a":-1.5e3,"b":true,"c":null,"d":"x"}`,
		`{"a":{"b":[1,{"c":"}]"}],"d":"\"{"},"e":[],"f":{}}`,
		"{\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\" : { \"c\" : \"d\\\\\" } \n}",
		`{"a":"\u00e9\\","b":"x,y}"}`,
	} {
		got, ok := decodeRawObject([]byte(in))
		if !ok {
			t.Errorf("%s: refused", in)
			continue
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("%s: members %v, want %v", in, got, want)
		}
		for k, w := range want {
			if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(w)) {
				t.Errorf("%s: %s = %s, want %s", in, k, got[k], w)
			}
		}
	}
	for _, in := range []string{`[]`, `"a"`, `null`, `{"a":1,"a":2}`, `{"a\u0062":1}`, `{"a\"":1}`} {
		if _, ok := decodeRawObject([]byte(in)); ok {
			t.Errorf("%s: split, want refusal", in)
		}
	}
}

// A keyed list element whose merge key is empty and omitted from the JSON
// (an image pull secret without a name) has no key for strategic merge,
// which then fails on any patch of that list: the typed merge must leave
// it to the JSON path rather than match the element by its empty key.
func TestTypedKeyedListWithOmittedEmptyKey(t *testing.T) {
	cur := richPod()
	cur.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: ""}}
	orig, err := json.Marshal(cur)
	if err != nil {
		t.Fatal(err)
	}
	for _, patch := range []string{
		`{"spec":{"imagePullSecrets":[{"name":""}]}}`,
		`{"spec":{"imagePullSecrets":[{"name":"x"}]}}`,
	} {
		if _, err := strategicpatch.StrategicMergePatch(orig, []byte(patch), &corev1.Pod{}); err == nil {
			t.Fatalf("%s: the JSON path took it; the test's premise is wrong", patch)
		}
		if got, ok := strategicPatchObject(registry.Pods(), cur, []byte(patch)); ok {
			t.Errorf("%s: typed path took what the JSON path rejects: %+v", patch, got.(*corev1.Pod).Spec.ImagePullSecrets)
		}
	}
}

// The typed strategic-merge path gives what patching the JSON gives.
func TestStrategicPatchObjectMatchesJSONPath(t *testing.T) {
	res := registry.Pods()
	cur := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: "n1", RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
	cur.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	cur.ResourceVersion = "7"
	cur.Labels = map[string]string{"a": "1", "b": "2"}
	cur.Finalizers = []string{"batch.kubernetes.io/job-tracking", "other"}
	cur.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	patches := map[string]string{
		"status":             `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":null}]}}`,
		"finalizer removal":  `{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.kubernetes.io/job-tracking"]}}`,
		"label delete":       `{"metadata":{"labels":{"a":null,"c":"3"}}}`,
		"container by name":  `{"spec":{"containers":[{"name":"c","image":"other"}]}}`,
		"resource quantity":  `{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"500m","memory":"1Gi"}}}]}}`,
		"rv as precondition": `{"metadata":{"resourceVersion":"7"},"status":{"message":"x"}}`,
	}
	for name, patch := range patches {
		t.Run(name, func(t *testing.T) {
			got, ok := strategicPatchObject(res, cur, []byte(patch))
			if !ok {
				t.Fatal("typed path refused a plain patch")
			}
			want := jsonPathPatch(t, cur, patch)
			if !equality.Semantic.DeepEqual(got, want) {
				t.Fatalf("typed path differs:\n got %+v\nwant %+v", got, want)
			}
		})
	}
	for name, patch := range map[string]string{
		"unknown field":   `{"status":{"phaze":"Running"}}`,
		"duplicate field": `{"status":{"phase":"Running","phase":"Failed"}}`,
		"other kind":      `{"kind":"Job","status":{}}`,
	} {
		if _, ok := strategicPatchObject(res, cur, []byte(patch)); ok {
			t.Errorf("%s: typed path took a patch the JSON path must report", name)
		}
	}
}
