//lint:file-ignore SA1019 core/v1 Endpoints is deprecated, but upstream still keeps those of the kubernetes Service and serves the resource.

package apiserver

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// kubernetesServiceInterval is how often the kubernetes Service and its
// endpoints are checked, as kube-apiserver's controlplane reconciler does.
const kubernetesServiceInterval = 10 * time.Second

// kubernetesService is the name of the Service in default that points at
// the API server.
const kubernetesService = "kubernetes"

// AdvertiseAt sets the address and port clients reach this server at,
// which the default/kubernetes Service and its Endpoints and EndpointSlice
// point to. Call it before Run; without it no kubernetes Service is kept.
func (s *Server) AdvertiseAt(self netip.AddrPort) { s.self = self }

// runKubernetesService keeps default/kubernetes and its endpoints as
// upstream's controlplane reconciler does: recreated when deleted, and the
// endpoints set back when edited.
func (s *Server) runKubernetesService(ctx context.Context) {
	if !s.self.IsValid() {
		return
	}
	client, err := kubernetes.NewForConfig(s.InProcessConfig())
	if err != nil {
		s.log.Error("kubernetes service: build client", "err", err)
		return
	}
	for {
		if err := s.reconcileKubernetesService(ctx, client); err != nil && ctx.Err() == nil {
			s.log.Warn("reconcile kubernetes service", "namespace", metav1.NamespaceDefault, "name", kubernetesService, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.clock.After(kubernetesServiceInterval):
		}
	}
}

func (s *Server) reconcileKubernetesService(ctx context.Context, client kubernetes.Interface) error {
	if err := s.ensureKubernetesService(ctx, client); err != nil {
		return err
	}
	if err := s.ensureKubernetesEndpoints(ctx, client); err != nil {
		return err
	}
	return s.ensureKubernetesEndpointSlice(ctx, client)
}

// servicePorts: 443 https to the server's own port.
func (s *Server) servicePorts() []corev1.ServicePort {
	return []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(int32(s.self.Port()))}}
}

func (s *Server) ensureKubernetesService(ctx context.Context, client kubernetes.Interface) error {
	svcs := client.CoreV1().Services(metav1.NamespaceDefault)
	cur, err := svcs.Get(ctx, kubernetesService, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault,
				Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: s.serviceRange.First().String(),
				Ports: s.servicePorts(), SessionAffinity: corev1.ServiceAffinityNone},
		}
		_, err = svcs.Create(ctx, svc, metav1.CreateOptions{})
		return ignoreExists(err, "creating service")
	}
	if err != nil {
		return fmt.Errorf("getting service: %w", err)
	}
	if equality.Semantic.DeepEqual(cur.Spec.Ports, s.servicePorts()) && cur.Spec.Type == corev1.ServiceTypeClusterIP {
		return nil
	}
	cur.Spec.Ports, cur.Spec.Type = s.servicePorts(), corev1.ServiceTypeClusterIP
	_, err = svcs.Update(ctx, cur, metav1.UpdateOptions{})
	return ignoreConflict(err, "updating service")
}

func (s *Server) ensureKubernetesEndpoints(ctx context.Context, client kubernetes.Interface) error {
	want := []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: s.self.Addr().String()}},
		Ports:     []corev1.EndpointPort{{Name: "https", Port: int32(s.self.Port()), Protocol: corev1.ProtocolTCP}},
	}}
	labels := map[string]string{discoveryv1.LabelSkipMirror: "true"}
	eps := client.CoreV1().Endpoints(metav1.NamespaceDefault)
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

func (s *Server) ensureKubernetesEndpointSlice(ctx context.Context, client kubernetes.Interface) error {
	ready := true
	port := int32(s.self.Port())
	name, proto := "https", corev1.ProtocolTCP
	want := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: kubernetesService}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{s.self.Addr().String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &port}},
	}
	if s.self.Addr().Is6() {
		want.AddressType = discoveryv1.AddressTypeIPv6
	}
	slices := client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
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
