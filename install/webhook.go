package install

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/batchlet/batchlet/pki"
	"github.com/batchlet/batchlet/webhook"
)

// Names of the webhook's objects.
const (
	WebhookName       = "batchlet-jobset"
	WebhookSecretName = ControllersName + "-webhook-tls"
	webhookPort       = 9443
	// WebhookCertDir is where the Deployment mounts the serving certificate.
	WebhookCertDir = "/var/run/batchlet/webhook-certs"
	// Serving certificate file names, as controller-runtime names them.
	WebhookCertFile = "tls.crt"
	WebhookKeyFile  = "tls.key"
	webhookCAFile   = "ca.crt"
)

// WebhookCerts is the webhook's serving certificate and the CA the API
// server trusts it by.
type WebhookCerts struct {
	CAPEM, CertPEM, KeyPEM []byte
}

// serviceHost is the name the API server calls the in-cluster webhook by.
func serviceHost(ns string) string { return ControllersName + "-webhook." + ns + ".svc" }

// NewWebhookCerts issues a CA and a serving certificate for hosts, keeping
// them in dir; a second call with the same dir reuses them.
func NewWebhookCerts(dir string, hosts []string) (*WebhookCerts, error) {
	b, err := pki.Ensure(dir, hosts)
	if err != nil {
		return nil, fmt.Errorf("issuing the webhook certificate in %s: %w", dir, err)
	}
	cert, err := os.ReadFile(filepath.Join(dir, pki.CertFile))
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(filepath.Join(dir, pki.KeyFile))
	if err != nil {
		return nil, err
	}
	return &WebhookCerts{CAPEM: b.CAPEM, CertPEM: cert, KeyPEM: key}, nil
}

// WriteServingFiles writes tls.crt and tls.key, as `batchlet controllers
// --webhook-cert-dir` reads them.
func (c *WebhookCerts) WriteServingFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := pki.WriteFileAtomic(filepath.Join(dir, WebhookCertFile), c.CertPEM, 0o600); err != nil {
		return err
	}
	return pki.WriteFileAtomic(filepath.Join(dir, WebhookKeyFile), c.KeyPEM, 0o600)
}

// InClusterWebhookCerts returns the certificates of an earlier install's
// Secret (none with a nil client), so a re-install does not rotate them under running replicas, or
// issues new ones for the webhook Service.
func InClusterWebhookCerts(ctx context.Context, client dynamic.Interface, ns, scratch string) (*WebhookCerts, error) {
	if client == nil { // a dry run
		return NewWebhookCerts(scratch, []string{serviceHost(ns)})
	}
	u, err := client.Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace(ns).Get(ctx, WebhookSecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return NewWebhookCerts(scratch, []string{serviceHost(ns)})
	case err != nil:
		return nil, fmt.Errorf("reading secret %s/%s: %w", ns, WebhookSecretName, err)
	}
	var s corev1.Secret
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
		return nil, err
	}
	c := &WebhookCerts{CAPEM: s.Data[webhookCAFile], CertPEM: s.Data[WebhookCertFile], KeyPEM: s.Data[WebhookKeyFile]}
	if len(c.CAPEM) == 0 || len(c.CertPEM) == 0 || len(c.KeyPEM) == 0 {
		return NewWebhookCerts(scratch, []string{serviceHost(ns)})
	}
	return c, nil
}

// WebhookHost returns the host of a webhook URL, for its certificate.
func WebhookHost(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("--webhook-url must be an https URL, got %q", rawURL)
	}
	host, _, err := net.SplitHostPort(u.Host)
	if err != nil {
		host = u.Host
	}
	return host, nil
}

// webhookConfigurations are the mutating and validating configurations for
// JobSets, calling the URL when set, else the in-cluster Service.
func webhookConfigurations(opts Options) []runtime.Object {
	client := func(path string) admissionregistrationv1.WebhookClientConfig {
		cc := admissionregistrationv1.WebhookClientConfig{CABundle: opts.Webhook.CAPEM}
		if opts.WebhookURL != "" {
			cc.URL = ptr.To(opts.WebhookURL + path)
		} else {
			cc.Service = &admissionregistrationv1.ServiceReference{Namespace: opts.Namespace, Name: ControllersName + "-webhook", Path: ptr.To(path), Port: ptr.To[int32](443)}
		}
		return cc
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"jobset.x-k8s.io"}, APIVersions: []string{"v1alpha2"}, Resources: []string{"jobsets"}},
	}}
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	return []runtime.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{
			TypeMeta:   typeMeta(admissionregistrationv1.SchemeGroupVersion, "MutatingWebhookConfiguration"),
			ObjectMeta: metav1.ObjectMeta{Name: WebhookName},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: "mjobset.batchlet.dev", ClientConfig: client(webhook.MutateJobSetPath), Rules: rules,
				SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](10),
			}},
		},
		&admissionregistrationv1.ValidatingWebhookConfiguration{
			TypeMeta:   typeMeta(admissionregistrationv1.SchemeGroupVersion, "ValidatingWebhookConfiguration"),
			ObjectMeta: metav1.ObjectMeta{Name: WebhookName},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "vjobset.batchlet.dev", ClientConfig: client(webhook.ValidateJobSetPath), Rules: rules,
				SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](10),
			}},
		},
	}
}

// webhookServing is the in-cluster webhook's Service and its certificate's
// Secret, which the Deployment mounts.
func webhookServing(opts Options) []runtime.Object {
	labels := map[string]string{"app.kubernetes.io/name": ControllersName}
	return []runtime.Object{
		&corev1.Secret{
			TypeMeta:   typeMeta(corev1.SchemeGroupVersion, "Secret"),
			ObjectMeta: metav1.ObjectMeta{Name: WebhookSecretName, Namespace: opts.Namespace},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{WebhookCertFile: opts.Webhook.CertPEM, WebhookKeyFile: opts.Webhook.KeyPEM, webhookCAFile: opts.Webhook.CAPEM},
		},
		&corev1.Service{
			TypeMeta:   typeMeta(corev1.SchemeGroupVersion, "Service"),
			ObjectMeta: metav1.ObjectMeta{Name: ControllersName + "-webhook", Namespace: opts.Namespace},
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{
				Name: "webhook", Port: 443, TargetPort: intstr.FromInt32(webhookPort),
			}}},
		},
	}
}
