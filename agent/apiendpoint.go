package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// kubernetesService is the Service (and EndpointSlice) whose address
// every container's KUBERNETES_SERVICE_* variables name.
const kubernetesService = "kubernetes"

// apiEndpoint answers where pods reach the API from a watch of the one
// default/kubernetes EndpointSlice, as the kubelet reads the Services of
// its env vars from an informer: not a Get per container start (issue 16).
// The watch starts at the first look-up (an agent of the sim runtime
// never makes one); until it has the object (or when it is forbidden to an
// agent with an older role) the look-up falls back to the Get.
type apiEndpoint struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	synced  cache.InformerSynced
	slices  discoverylisters.EndpointSliceNamespaceLister

	stop  <-chan struct{} // set by run, before any look-up
	watch sync.Once
}

func newAPIEndpoint(client kubernetes.Interface) *apiEndpoint {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(metav1.NamespaceDefault),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", kubernetesService).String()
		}))
	inf := f.Discovery().V1().EndpointSlices()
	return &apiEndpoint{client: client, factory: f, synced: inf.Informer().HasSynced,
		slices: inf.Lister().EndpointSlices(metav1.NamespaceDefault)}
}

// run lets look-ups start the watch, which ends when stop is closed.
func (e *apiEndpoint) run(stop <-chan struct{}) { e.stop = stop }

// address is the API server's first endpoint address and port.
func (e *apiEndpoint) address(ctx context.Context) (string, int32, error) {
	if e.stop != nil {
		e.watch.Do(func() { e.factory.Start(e.stop) })
	}
	eps, err := e.slice(ctx)
	if err != nil {
		return "", 0, err
	}
	if len(eps.Endpoints) == 0 || len(eps.Endpoints[0].Addresses) == 0 || len(eps.Ports) == 0 || eps.Ports[0].Port == nil {
		return "", 0, errors.New("endpointslice default/kubernetes has no endpoint")
	}
	return eps.Endpoints[0].Addresses[0], *eps.Ports[0].Port, nil
}

// slice is the cached EndpointSlice, or the API's when the cache has none.
func (e *apiEndpoint) slice(ctx context.Context) (*discoveryv1.EndpointSlice, error) {
	if e.synced() {
		if eps, err := e.slices.Get(kubernetesService); err == nil {
			return eps, nil
		}
	}
	eps, err := e.client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Get(ctx, kubernetesService, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get endpointslice default/kubernetes: %w", err)
	}
	return eps, nil
}
