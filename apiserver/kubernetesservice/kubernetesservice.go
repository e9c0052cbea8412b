//lint:file-ignore SA1019 core/v1 Endpoints is deprecated, but upstream still keeps those of the kubernetes Service and serves the resource.

// Package kubernetesservice keeps the default/kubernetes Service, its
// Endpoints and its EndpointSlice pointing at the API server, as
// kube-apiserver's control-plane reconciler does: recreated when deleted,
// set back when edited, checked every 10 seconds.
//
// It is a loop outside the request path that sees the API only through
// client-go (the server hands it an in-process client).
package kubernetesservice

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// kubernetesServiceInterval is how often the kubernetes Service and its
// endpoints are checked, as kube-apiserver's controlplane reconciler does.
const kubernetesServiceInterval = 10 * time.Second

// kubernetesService is the name of the Service in default that points at
// the API server.
const kubernetesService = "kubernetes"

// Loop keeps default/kubernetes pointing at Self.
type Loop struct {
	Client kubernetes.Interface
	// Self is where clients reach the API server.
	Self netip.AddrPort
	// ClusterIP is the Service's address (the first of the service range).
	ClusterIP netip.Addr
	Clock     clock.Clock
	Log       *slog.Logger
}

// Run reconciles at start and every interval until ctx ends.
func (l *Loop) Run(ctx context.Context) {
	for {
		if err := l.Reconcile(ctx); err != nil && ctx.Err() == nil {
			l.Log.Warn("reconcile kubernetes service", "namespace", metav1.NamespaceDefault, "name", kubernetesService, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-l.Clock.After(kubernetesServiceInterval):
		}
	}
}

// Reconcile makes the Service, its Endpoints and its EndpointSlice what
// they should be, once.
func (l *Loop) Reconcile(ctx context.Context) error {
	if err := l.ensureService(ctx); err != nil {
		return err
	}
	if err := l.ensureEndpoints(ctx); err != nil {
		return err
	}
	return l.ensureEndpointSlice(ctx)
}

// servicePorts: 443 https to the server's own port.
func (l *Loop) servicePorts() []corev1.ServicePort {
	return []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(int32(l.Self.Port()))}}
}

func (l *Loop) ensureService(ctx context.Context) error {
	svcs := l.Client.CoreV1().Services(metav1.NamespaceDefault)
	cur, err := svcs.Get(ctx, kubernetesService, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault,
				Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: l.ClusterIP.String(),
				Ports: l.servicePorts(), SessionAffinity: corev1.ServiceAffinityNone},
		}
		_, err = svcs.Create(ctx, svc, metav1.CreateOptions{})
		return ignoreExists(err, "creating service")
	}
	if err != nil {
		return fmt.Errorf("getting service: %w", err)
	}
	if equality.Semantic.DeepEqual(cur.Spec.Ports, l.servicePorts()) && cur.Spec.Type == corev1.ServiceTypeClusterIP {
		return nil
	}
	cur.Spec.Ports, cur.Spec.Type = l.servicePorts(), corev1.ServiceTypeClusterIP
	_, err = svcs.Update(ctx, cur, metav1.UpdateOptions{})
	return ignoreConflict(err, "updating service")
}

func (l *Loop) ensureEndpoints(ctx context.Context) error {
	want := []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: l.Self.Addr().String()}},
		Ports:     []corev1.EndpointPort{{Name: "https", Port: int32(l.Self.Port()), Protocol: corev1.ProtocolTCP}},
	}}
	labels := map[string]string{discoveryv1.LabelSkipMirror: "true"}
	eps := l.Client.CoreV1().Endpoints(metav1.NamespaceDefault)
	cur, err := eps.Get(ctx, kubernetesService, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault, Labels: labels}, Subsets: want}
		_, err = eps.Create(ctx, ep, metav1.CreateOptions{})
		return ignoreExists(err, "creating endpoints")
	}
	if err != nil {
		return fmt.Errorf("getting endpoints: %w", err)
	}
	if equality.Semantic.DeepEqual(cur.Subsets, want) && cur.Labels[discoveryv1.LabelSkipMirror] == "true" {
		return nil
	}
	cur.Subsets = want
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	cur.Labels[discoveryv1.LabelSkipMirror] = "true"
	_, err = eps.Update(ctx, cur, metav1.UpdateOptions{})
	return ignoreConflict(err, "updating endpoints")
}

func (l *Loop) ensureEndpointSlice(ctx context.Context) error {
	ready := true
	port := int32(l.Self.Port())
	name, proto := "https", corev1.ProtocolTCP
	want := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: kubernetesService}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{l.Self.Addr().String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &port}},
	}
	if l.Self.Addr().Is6() {
		want.AddressType = discoveryv1.AddressTypeIPv6
	}
	slices := l.Client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	cur, err := slices.Get(ctx, kubernetesService, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = slices.Create(ctx, want, metav1.CreateOptions{})
		return ignoreExists(err, "creating endpointslice")
	}
	if err != nil {
		return fmt.Errorf("getting endpointslice: %w", err)
	}
	if equality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) && equality.Semantic.DeepEqual(cur.Ports, want.Ports) &&
		cur.AddressType == want.AddressType && cur.Labels[discoveryv1.LabelServiceName] == kubernetesService {
		return nil
	}
	cur.Endpoints, cur.Ports, cur.AddressType = want.Endpoints, want.Ports, want.AddressType
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	cur.Labels[discoveryv1.LabelServiceName] = kubernetesService
	_, err = slices.Update(ctx, cur, metav1.UpdateOptions{})
	return ignoreConflict(err, "updating endpointslice")
}

// ignoreExists and ignoreConflict: a concurrent writer won; the next pass
// checks again.
func ignoreExists(err error, what string) error {
	if err == nil || apierrors.IsAlreadyExists(err) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

func ignoreConflict(err error, what string) error {
	if err == nil || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
