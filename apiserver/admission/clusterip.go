package admission

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/batchlet/batchlet/apiserver/ipalloc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ClusterIPs gives new Services their ClusterIP from Range. The stored
// Services are the allocator's whole state, so it survives restarts and a
// deleted Service frees its address; mu keeps two creates from taking the
// same one.
type ClusterIPs struct {
	objects Objects
	rng     *ipalloc.Range
	mu      sync.Mutex
}

// NewClusterIPs is the allocator of r over the Services objects holds.
func NewClusterIPs(objects Objects, r *ipalloc.Range) *ClusterIPs {
	return &ClusterIPs{objects: objects, rng: r}
}

// Allocate gives svc its ClusterIP: the requested one once checked against
// the range and the stored Services, or a free one. The returned unlock
// must be called once the Service is stored (or not): until then no other
// Service can take the same address.
func (a *ClusterIPs) Allocate(ctx context.Context, svc *corev1.Service) (unlock func(), err error) {
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
	a.mu.Lock()
	inUse, err := a.inUse(ctx)
	if err != nil {
		a.mu.Unlock()
		return nothing, err
	}
	got, err := a.rng.Allocate(want, func(addr netip.Addr) bool { return inUse[addr] })
	if err != nil {
		a.mu.Unlock()
		return nothing, allocationError(svc, requested, err)
	}
	setClusterIP(svc, got.String())
	return a.mu.Unlock, nil
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

// inUse collects the ClusterIPs of the stored Services.
func (a *ClusterIPs) inUse(ctx context.Context) (map[netip.Addr]bool, error) {
	services, err := a.objects.List(ctx, corev1.SchemeGroupVersion.WithResource("services"), "", fields.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing services: %w", err)
	}
	inUse := map[netip.Addr]bool{}
	for _, obj := range services {
		for _, ip := range obj.(*corev1.Service).Spec.ClusterIPs {
			if addr, err := netip.ParseAddr(ip); err == nil {
				inUse[addr] = true
			}
		}
	}
	return inUse, nil
}
