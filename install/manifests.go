package install

import (
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// Names of what Objects renders.
const (
	DefaultNamespace = "batchlet-system"
	ControllersName  = "batchlet-controllers"
	AgentName        = "batchlet-agent"
	// LeaseName is the Lease the controllers' replicas elect a leader over.
	LeaseName = "batchlet-controllers"
	// ManagedByLabel marks every object `batchlet install` created.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	managedByValue = "batchlet"
)

// Options selects what Objects renders.
type Options struct {
	// Namespace holds the service accounts, the leader-election Lease and
	// the Deployment.
	Namespace string
	// Controllers are the controllers the RBAC (and the Deployment) is for,
	// as `batchlet controllers --controllers` names them.
	Controllers []string
	// SkipCRDs leaves the CustomResourceDefinitions out.
	SkipCRDs bool
	// Agent adds a service account and role for `batchlet agent` nodes.
	Agent bool
	// Image, when set, adds a Deployment running `batchlet controllers`
	// from this image with leader election.
	Image string
	// Replicas of the Deployment; two or more rely on leader election.
	Replicas int32
	// Webhook, when set, adds the JobSet admission webhook: its
	// configurations trust Webhook.CAPEM and call WebhookURL, or with no
	// URL the Deployment's Service (with a Secret holding the certificate).
	Webhook    *WebhookCerts
	WebhookURL string
	// JobControllerMode, when set, is the Deployment's
	// --job-controller-mode (replace or alongside).
	JobControllerMode string
}

// Objects renders what `batchlet install` applies, in apply order: CRDs,
// the namespace, service accounts, roles and bindings, the Deployment.
func Objects(opts Options) ([]*unstructured.Unstructured, error) {
	if opts.Namespace == "" {
		return nil, errors.New("install: a namespace is required")
	}
	if len(opts.Controllers) == 0 {
		return nil, errors.New("install: at least one controller is required")
	}
	if opts.Webhook == nil && (opts.WebhookURL != "" || (opts.Image != "" && slices.Contains(opts.Controllers, "jobset"))) {
		return nil, errors.New("install: the JobSet webhook needs certificates")
	}
	var objs []*unstructured.Unstructured
	if !opts.SkipCRDs {
		crds, err := CRDs()
		if err != nil {
			return nil, err
		}
		objs = append(objs, crds...)
	}
	typed, err := typedObjects(opts)
	if err != nil {
		return nil, err
	}
	for _, obj := range typed {
		u, err := toUnstructured(obj)
		if err != nil {
			return nil, err
		}
		u.SetLabels(mergeLabel(u.GetLabels()))
		objs = append(objs, u)
	}
	return objs, nil
}

func typedObjects(opts Options) ([]runtime.Object, error) {
	rules, err := rulesFor(opts.Controllers)
	if err != nil {
		return nil, err
	}
	ns := opts.Namespace
	objs := []runtime.Object{
		&corev1.Namespace{TypeMeta: typeMeta(corev1.SchemeGroupVersion, "Namespace"), ObjectMeta: metav1.ObjectMeta{Name: ns}},
		serviceAccount(ns, ControllersName),
		clusterRole(ControllersName, rules),
		clusterRoleBinding(ControllersName, ns),
		&rbacv1.Role{
			TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion, "Role"),
			ObjectMeta: metav1.ObjectMeta{Name: ControllersName + "-leader-election", Namespace: ns},
			Rules:      leaderElectionRules,
		},
		&rbacv1.RoleBinding{
			TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion, "RoleBinding"),
			ObjectMeta: metav1.ObjectMeta{Name: ControllersName + "-leader-election", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: ControllersName + "-leader-election"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ControllersName, Namespace: ns}},
		},
	}
	if opts.Agent {
		objs = append(objs, serviceAccount(ns, AgentName), clusterRole(AgentName, agentRules), clusterRoleBinding(AgentName, ns))
	}
	resultsView := clusterRole(ResultsViewName, resultsViewRules)
	resultsView.Labels = map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}
	objs = append(objs, resultsView)
	// The webhook's configurations come last: with failurePolicy Fail they
	// refuse JobSets until what serves them is in place.
	var configs []runtime.Object
	if opts.Webhook != nil {
		configs = webhookConfigurations(opts)
		if opts.WebhookURL == "" {
			objs = append(objs, webhookServing(opts)...)
		}
	}
	if opts.Image != "" {
		objs = append(objs, deployment(opts))
	}
	return append(objs, configs...), nil
}

func serviceAccount(ns, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{TypeMeta: typeMeta(corev1.SchemeGroupVersion, "ServiceAccount"), ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
}

func clusterRole(name string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{TypeMeta: typeMeta(rbacv1.SchemeGroupVersion, "ClusterRole"), ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func clusterRoleBinding(name, ns string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion, "ClusterRoleBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}
}

// deployment runs `batchlet controllers` in the cluster. Every replica
// campaigns for the Lease; only the leader runs controllers, so a second
// replica is a warm standby.
func deployment(opts Options) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": ControllersName}
	replicas := opts.Replicas
	if replicas < 1 {
		replicas = 1
	}
	args := []string{"controllers", "--leader-elect", "--leader-elect-namespace=" + opts.Namespace, "--metrics-bind-address=:8080"}
	for _, c := range opts.Controllers {
		args = append(args, "--controllers="+c)
	}
	if opts.JobControllerMode != "" {
		args = append(args, "--job-controller-mode="+opts.JobControllerMode)
	}
	var mounts []corev1.VolumeMount
	var volumes []corev1.Volume
	if opts.Webhook != nil {
		args = append(args, fmt.Sprintf("--webhook-bind-address=:%d", webhookPort), "--webhook-cert-dir="+WebhookCertDir)
		mounts = []corev1.VolumeMount{{Name: "webhook-certs", MountPath: WebhookCertDir, ReadOnly: true}}
		volumes = []corev1.Volume{{Name: "webhook-certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: WebhookSecretName}}}}
	}
	return &appsv1.Deployment{
		TypeMeta:   typeMeta(appsv1.SchemeGroupVersion, "Deployment"),
		ObjectMeta: metav1.ObjectMeta{Name: ControllersName, Namespace: opts.Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: ControllersName,
					Volumes:            volumes,
					Containers: []corev1.Container{{
						Name:         "controllers",
						Image:        opts.Image,
						Args:         args,
						VolumeMounts: mounts,
						Ports:        []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8080}, {Name: "webhook", ContainerPort: webhookPort}},
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot:             ptr.To(true),
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

func typeMeta(gv schema.GroupVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: gv.String(), Kind: kind}
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	// The converter keeps zero-valued creationTimestamp and status; a
	// manifest leaves them out.
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}

func mergeLabel(labels map[string]string) map[string]string {
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ManagedByLabel] = managedByValue
	return labels
}
