package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

// ServiceAccountTokenMountPath is where pods find their token, CA and
// namespace.
const ServiceAccountTokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// The projected token volume's parts, as kube-apiserver's plugin makes it.
const (
	projectedTokenExpirationSeconds = 3607
	rootCAConfigMap                 = "kube-root-ca.crt"
)

// ServiceAccount is kube-apiserver's ServiceAccount admission for a new
// pod: its service account must exist, and unless the pod or the account
// opts out, every container mounts a projected volume with a bound token,
// the cluster CA and the namespace at ServiceAccountTokenMountPath. Run it
// only where service-account tokens are issued.
type ServiceAccount struct {
	Objects Objects
}

// Admit checks pod's service account and mounts its token.
func (p ServiceAccount) Admit(ctx context.Context, pod *corev1.Pod) error {
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return nil
	}
	obj, err := p.Objects.Get(ctx, corev1.SchemeGroupVersion.WithResource("serviceaccounts"), pod.Namespace, pod.Spec.ServiceAccountName)
	if apierrors.IsNotFound(err) {
		// The informer lister's error, which upstream's plugin reports.
		err = apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccount"}, pod.Spec.ServiceAccountName)
	}
	if err != nil {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod.Name,
			fmt.Errorf("error looking up service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if shouldAutomount(obj.(*corev1.ServiceAccount), pod) {
		mountServiceAccountToken(pod)
	}
	return nil
}

// shouldAutomount: the pod's automountServiceAccountToken wins, then the
// service account's; both unset mounts.
func shouldAutomount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

func mountServiceAccountToken(pod *corev1.Pod) {
	name := "kube-api-access-" + utilrand.String(5)
	mode := int32(0o644)
	expiration := int64(projectedTokenExpirationSeconds)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &expiration, Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: rootCAConfigMap},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}},
	}})
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: ServiceAccountTokenMountPath}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if !mountsPath(list[i].VolumeMounts, ServiceAccountTokenMountPath) {
				list[i].VolumeMounts = append(list[i].VolumeMounts, mount)
			}
		}
	}
}

func mountsPath(mounts []corev1.VolumeMount, path string) bool {
	for _, m := range mounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}
