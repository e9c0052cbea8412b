package agent

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LeaseNamespace holds the node Leases.
const LeaseNamespace = "kube-node-lease"

// renewLease keeps the node's Lease fresh every quarter LeaseDuration.
func (a *Agent) renewLease(ctx context.Context) {
	interval := a.cfg.LeaseDuration / 4
	for {
		if err := a.renewLeaseOnce(ctx); err != nil && ctx.Err() == nil {
			a.log.Info("lease renewal failed", "err", err.Error())
		}
		t := a.cfg.Clock.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

func (a *Agent) renewLeaseOnce(ctx context.Context) error {
	leases := a.cfg.Client.CoordinationV1().Leases(LeaseNamespace)
	now := metav1.NewMicroTime(a.cfg.Clock.Now())
	lease, err := leases.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return a.createLease(ctx, now)
	}
	if err != nil {
		return fmt.Errorf("get lease: %w", err)
	}
	lease = lease.DeepCopy()
	lease.Spec.RenewTime = &now
	holder := a.cfg.NodeName
	lease.Spec.HolderIdentity = &holder
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update lease: %w", err)
	}
	return nil
}

func (a *Agent) createLease(ctx context.Context, now metav1.MicroTime) error {
	holder := a.cfg.NodeName
	secs := int32(a.cfg.LeaseDuration / time.Second)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: a.cfg.NodeName, Namespace: LeaseNamespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: a.cfg.NodeName, UID: a.nodeUID}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &now},
	}
	_, err := a.cfg.Client.CoordinationV1().Leases(LeaseNamespace).Create(ctx, lease, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: LeaseNamespace}}
		if _, nerr := a.cfg.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); nerr != nil && !apierrors.IsAlreadyExists(nerr) {
			return fmt.Errorf("create namespace %s: %w", LeaseNamespace, nerr)
		}
		_, err = a.cfg.Client.CoordinationV1().Leases(LeaseNamespace).Create(ctx, lease, metav1.CreateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create lease: %w", err)
	}
	return nil
}
