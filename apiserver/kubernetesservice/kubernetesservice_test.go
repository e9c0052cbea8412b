package kubernetesservice

import (
	"context"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

func newLoop(self string, objects ...runtime.Object) *Loop {
	return &Loop{Client: fake.NewClientset(objects...), Self: netip.MustParseAddrPort(self),
		ClusterIP: netip.MustParseAddr("10.96.0.1"), Clock: clocktesting.NewFakeClock(time.Unix(0, 0)), Log: slog.New(slog.DiscardHandler)}
}

func TestReconcile(t *testing.T) {
	edited := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.1",
			Ports: []corev1.ServicePort{{Name: "https", Port: 8443, TargetPort: intstr.FromInt32(1)}}}}
	tests := map[string]struct {
		self     string
		existing []runtime.Object
		wantType discoveryv1.AddressType
	}{
		"created":          {self: "192.0.2.1:6443", wantType: discoveryv1.AddressTypeIPv4},
		"IPv6":             {self: "[2001:db8::1]:6443", wantType: discoveryv1.AddressTypeIPv6},
		"edited, set back": {self: "192.0.2.1:6443", existing: []runtime.Object{edited}, wantType: discoveryv1.AddressTypeIPv4},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l := newLoop(tc.self, tc.existing...)
			ctx := context.Background()
			if err := l.Reconcile(ctx); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			svc, err := l.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			port := svc.Spec.Ports[0]
			if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.ClusterIP != "10.96.0.1" || port.Port != 443 || port.TargetPort.IntVal != 6443 {
				t.Errorf("service = %s %s %+v, want ClusterIP 10.96.0.1 443→6443", svc.Spec.Type, svc.Spec.ClusterIP, svc.Spec.Ports)
			}
			ep, err := l.Client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := ep.Subsets[0].Addresses[0].IP; got != l.Self.Addr().String() || ep.Labels[discoveryv1.LabelSkipMirror] != "true" {
				t.Errorf("endpoints = %s %v, want %s skip-mirror", got, ep.Labels, l.Self.Addr())
			}
			slice, err := l.Client.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if slice.AddressType != tc.wantType || slice.Endpoints[0].Addresses[0] != l.Self.Addr().String() || *slice.Ports[0].Port != 6443 {
				t.Errorf("endpointslice = %s %+v, want %s at %s:6443", slice.AddressType, slice.Endpoints, tc.wantType, l.Self.Addr())
			}
		})
	}
}
