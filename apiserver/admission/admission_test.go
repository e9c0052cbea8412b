package admission

import (
	"context"
	"strings"
	"testing"

	"github.com/batchlet/batchlet/apiserver/ipalloc"
	"github.com/batchlet/batchlet/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeObjects serves objects by resource, namespace and name.
type fakeObjects map[string]runtime.Object

func key(resource, namespace, name string) string { return resource + "/" + namespace + "/" + name }

func (f fakeObjects) Get(_ context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	if obj, ok := f[key(gvr.Resource, namespace, name)]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func (f fakeObjects) List(_ context.Context, gvr schema.GroupVersionResource, _ string, _ fields.Selector) ([]runtime.Object, error) {
	var out []runtime.Object
	for k, obj := range f {
		if strings.HasPrefix(k, gvr.Resource+"/") {
			out = append(out, obj)
		}
	}
	return out, nil
}

func TestNamespaceLifecycle(t *testing.T) {
	now := metav1.Now()
	objects := fakeObjects{
		key("namespaces", "", "live"): &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "live"}},
		key("namespaces", "", "going"): &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going", DeletionTimestamp: &now},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
	}
	for _, tc := range []struct {
		name, namespace string
		res             *registry.Resource
		wantErr         string
	}{
		{"live namespace", "live", registry.ConfigMaps(), ""},
		{"no namespace", "", registry.ConfigMaps(), "the server could not find the requested resource: namespace is required"},
		{"missing namespace", "gone", registry.ConfigMaps(), `namespaces "gone" not found`},
		{"terminating namespace", "going", registry.ConfigMaps(), `configmaps "c" is forbidden: unable to create new content in namespace going because it is being terminated`},
		{"events still land", "going", registry.Events(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := NamespaceLifecycle{Objects: objects}.Admit(context.Background(), tc.res, tc.namespace, "c")
			if got := errString(err); got != tc.wantErr {
				t.Errorf("error %q, want %q", got, tc.wantErr)
			}
		})
	}
}

func TestServiceAccount(t *testing.T) {
	no := false
	objects := fakeObjects{
		key("serviceaccounts", "ns", "default"): &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"}},
		key("serviceaccounts", "ns", "quiet"):   &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet", Namespace: "ns"}, AutomountServiceAccountToken: &no},
	}
	for _, tc := range []struct {
		name, account string
		wantMounted   bool
		wantErr       string
	}{
		{"default account mounts its token", "default", true, ""},
		{"account opting out mounts nothing", "quiet", false, ""},
		{"missing account is forbidden", "ghost", false, `pods "p" is forbidden: error looking up service account ns/ghost: serviceaccount "ghost" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{ServiceAccountName: tc.account,
				InitContainers: []corev1.Container{{Name: "init"}}, Containers: []corev1.Container{{Name: "main"}}}}
			err := ServiceAccount{Objects: objects}.Admit(context.Background(), pod)
			if got := errString(err); got != tc.wantErr {
				t.Fatalf("error %q, want %q", got, tc.wantErr)
			}
			mounted := len(pod.Spec.Volumes) == 1 && mountsPath(pod.Spec.InitContainers[0].VolumeMounts, ServiceAccountTokenMountPath) &&
				mountsPath(pod.Spec.Containers[0].VolumeMounts, ServiceAccountTokenMountPath)
			if mounted != tc.wantMounted {
				t.Errorf("mounted %v, want %v: %+v", mounted, tc.wantMounted, pod.Spec)
			}
		})
	}
}

func TestClusterIPs(t *testing.T) {
	rng, err := ipalloc.NewRange("10.96.0.0/12")
	if err != nil {
		t.Fatal(err)
	}
	objects := fakeObjects{
		key("services", "default", "kubernetes"): &corev1.Service{Spec: corev1.ServiceSpec{ClusterIPs: []string{"10.96.0.1"}}},
	}
	for _, tc := range []struct {
		name, requested, wantIP, wantErr string
		external                         bool
	}{
		{name: "requested free address", requested: "10.96.0.10", wantIP: "10.96.0.10"},
		{name: "headless", requested: "None", wantIP: "None"},
		{name: "external name gets none", external: true},
		{name: "address in use", requested: "10.96.0.1",
			wantErr: `Service "s" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.1"]: failed to allocate IP 10.96.0.1: provided IP is already allocated`},
		{name: "not an address", requested: "nope",
			wantErr: `Service "s" is invalid: spec.clusterIPs[0]: Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: corev1.ServiceSpec{ClusterIP: tc.requested}}
			if tc.external {
				svc.Spec.Type = corev1.ServiceTypeExternalName
			}
			unlock, err := NewClusterIPs(objects, rng).Allocate(context.Background(), svc)
			unlock()
			if got := errString(err); got != tc.wantErr {
				t.Fatalf("error %q, want %q", got, tc.wantErr)
			}
			if tc.wantErr == "" && svc.Spec.ClusterIP != tc.wantIP {
				t.Errorf("clusterIP %q, want %q", svc.Spec.ClusterIP, tc.wantIP)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestNamespaceLifecycleAdmitDelete(t *testing.T) {
	for _, tc := range []struct {
		name, object string
		res          *registry.Resource
		wantErr      string
	}{
		{"default", "default", registry.Namespaces(), `namespaces "default" is forbidden: this namespace may not be deleted`},
		{"kube-system", "kube-system", registry.Namespaces(), `namespaces "kube-system" is forbidden: this namespace may not be deleted`},
		{"kube-public", "kube-public", registry.Namespaces(), `namespaces "kube-public" is forbidden: this namespace may not be deleted`},
		{"another namespace", "team-a", registry.Namespaces(), ""},
		{"not a namespace", "default", registry.ConfigMaps(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errString(NamespaceLifecycle{}.AdmitDelete(tc.res, tc.object)); got != tc.wantErr {
				t.Errorf("AdmitDelete error %q, want %q", got, tc.wantErr)
			}
		})
	}
}
