package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/apiserver/ipalloc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultServiceCIDR is the service CIDR unless configured: kubeadm's
// default, whose first address 10.96.0.1 is the kubernetes Service.
const DefaultServiceCIDR = "10.96.0.0/12"

// allocateClusterIP gives a new Service its ClusterIP: the requested one
// once checked against the range and the stored Services, or a free one.
// The returned unlock must be called once the Service is stored (or not):
// until then no other Service can take the same address.
func (s *Server) allocateClusterIP(ctx context.Context, svc *corev1.Service) (unlock func(), err error) {
	nothing := func() {}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nothing, nil
	}
	requested := svc.Spec.ClusterIP
	if requested == "" && len(svc.Spec.ClusterIPs) > 0 {
		requested = svc.Spec.ClusterIPs[0]
	}
	if requested == corev1.ClusterIPNone {
		setClusterIP(svc, corev1.ClusterIPNone)
		return nothing, nil
	}
	var want netip.Addr
	if requested != "" {
		if want, err = netip.ParseAddr(requested); err != nil {
			return nothing, invalidService(svc, field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), requested,
				"must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
		}
	}
	s.clusterIPMu.Lock()
	inUse, err := s.clusterIPsInUse(ctx)
	if err != nil {
		s.clusterIPMu.Unlock()
		return nothing, err
	}
	got, err := s.serviceRange.Allocate(want, func(a netip.Addr) bool { return inUse[a] })
	if err != nil {
		s.clusterIPMu.Unlock()
		return nothing, allocationError(svc, requested, err)
	}
	setClusterIP(svc, got.String())
	return s.clusterIPMu.Unlock, nil
}

// allocationError is upstream's answer to a failed allocation.
func allocationError(svc *corev1.Service, requested string, err error) error {
	if requested == "" {
		if errors.Is(err, ipalloc.ErrFull) {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %w", err))
		}
		return apierrors.NewInternalError(fmt.Errorf("allocating a serviceIP: %w", err))
	}
	return invalidService(svc, field.Invalid(field.NewPath("spec", "clusterIPs"), []string{requested},
		fmt.Sprintf("failed to allocate IP %s: %v", requested, err)))
}

func invalidService(svc *corev1.Service, errs ...*field.Error) error {
	return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, errs)
}

// setClusterIP records a single-stack IPv4 ClusterIP as upstream does.
func setClusterIP(svc *corev1.Service, ip string) {
	svc.Spec.ClusterIP = ip
	svc.Spec.ClusterIPs = []string{ip}
	if len(svc.Spec.IPFamilies) == 0 {
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	}
	if svc.Spec.IPFamilyPolicy == nil {
		single := corev1.IPFamilyPolicySingleStack
		svc.Spec.IPFamilyPolicy = &single
	}
}

// clusterIPsInUse collects the ClusterIPs of the stored Services: the
// allocator's whole state, so it survives restarts and a deleted Service
// frees its address.
func (s *Server) clusterIPsInUse(ctx context.Context) (map[netip.Addr]bool, error) {
	res := s.resource("", "v1", "services")
	everything := genericstore.Everything(res)
	lr, err := s.objects.List(ctx, res, "", everything, 0, "", "", "")
	if err != nil {
		return nil, fmt.Errorf("listing services: %w", err)
	}
	inUse := map[netip.Addr]bool{}
	for _, obj := range lr.Items {
		for _, ip := range obj.(*corev1.Service).Spec.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				inUse[a] = true
			}
		}
	}
	return inUse, nil
}
