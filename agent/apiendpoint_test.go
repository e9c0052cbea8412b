package agent

import (
	"context"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func kubernetesSlice(addrs ...string) *discoveryv1.EndpointSlice {
	eps := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](6443)}}}
	if len(addrs) > 0 {
		eps.Endpoints = []discoveryv1.Endpoint{{Addresses: addrs}}
	}
	return eps
}

// TestAPIEndpoint: the address comes from the watched EndpointSlice once
// the watch (started by a first look-up) has it, with no Get; from a Get
// before; the same answers and errors either way.
func TestAPIEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		objects  []runtime.Object
		watch    bool
		wantHost string
		wantErr  string
		wantGets int
	}{
		{name: "before the watch", objects: []runtime.Object{kubernetesSlice("10.0.0.5")}, wantHost: "10.0.0.5", wantGets: 1},
		{name: "watched", objects: []runtime.Object{kubernetesSlice("10.0.0.5")}, watch: true, wantHost: "10.0.0.5", wantGets: 0},
		{name: "missing", wantErr: `get endpointslice default/kubernetes: endpointslices.discovery.k8s.io "kubernetes" not found`, wantGets: 1},
		{name: "missing, watched", watch: true, wantErr: `get endpointslice default/kubernetes: endpointslices.discovery.k8s.io "kubernetes" not found`, wantGets: 1},
		{name: "no endpoint", objects: []runtime.Object{kubernetesSlice()}, watch: true, wantErr: "endpointslice default/kubernetes has no endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.objects...)
			e := newAPIEndpoint(client)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.watch {
				e.run(ctx.Done())
				_, _, _ = e.address(ctx) // the first look-up starts the watch
				if !waitForSync(ctx, e.synced) {
					t.Fatal("no sync")
				}
			}
			client.ClearActions()
			host, port, err := e.address(ctx)
			switch {
			case tc.wantErr != "":
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("err = %v, want %q", err, tc.wantErr)
				}
			case err != nil || host != tc.wantHost || port != 6443:
				t.Errorf("address = %s:%d (%v), want %s:6443", host, port, err, tc.wantHost)
			}
			gets := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "get" && a.GetResource().Resource == "endpointslices" {
					gets++
				}
			}
			if gets != tc.wantGets {
				t.Errorf("%d Gets, want %d", gets, tc.wantGets)
			}
		})
	}
}
