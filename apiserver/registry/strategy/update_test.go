package strategy

import (
	"strings"
	"testing"

	"github.com/batchlet/batchlet/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// An update keeps the server-owned metadata, bumps the generation only on
// a spec change of the main resource, and validates with the spec
// comparison PrepareForUpdate made.
func TestPrepareAndValidateUpdate(t *testing.T) {
	st := For(registry.Pods(), clocktesting.NewFakePassiveClock(epoch))
	old := testPod("p")
	old.UID, old.Generation, old.ResourceVersion = "uid-1", 1, "5"
	st.PrepareForCreate(old) // the stored pod is defaulted
	for _, tc := range []struct {
		name        string
		mode        Mode
		edit        func(p *corev1.Pod)
		wantChanged bool
		wantGen     int64
		wantErr     string
	}{
		{"labels only", Main, func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, false, 1, ""},
		{"image change", Main, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "other" }, true, 2, ""},
		{"forbidden spec change", Main, func(p *corev1.Pod) { p.Spec.Hostname = "h" }, true, 2, "pod updates may not change fields other than"},
		{"status write keeps spec", Status, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "other" }, false, 1, ""},
		{"raw write checks metadata", Raw, func(p *corev1.Pod) { p.Labels = map[string]string{"a": "-x-"} }, false, 1, "metadata.labels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := old.DeepCopy()
			obj.UID, obj.ResourceVersion, obj.Generation = "client", "1", 9
			tc.edit(obj)
			changed := st.PrepareForUpdate(obj, old, tc.mode)
			if changed != tc.wantChanged || obj.Generation != tc.wantGen {
				t.Errorf("specChanged %v generation %d, want %v %d", changed, obj.Generation, tc.wantChanged, tc.wantGen)
			}
			if obj.UID != old.UID || obj.ResourceVersion != old.ResourceVersion {
				t.Errorf("uid %q rv %q not kept from the stored object", obj.UID, obj.ResourceVersion)
			}
			errs := st.ValidateUpdate(obj, old, tc.mode, changed)
			if got := errs.ToAggregate(); (got == nil) != (tc.wantErr == "") || (got != nil && !strings.Contains(got.Error(), tc.wantErr)) {
				t.Errorf("errors %v, want %q", got, tc.wantErr)
			}
		})
	}
}
