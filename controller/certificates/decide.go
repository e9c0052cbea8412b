package certificates

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Who may ask for what, as kube-apiserver and the kubelet name them.
const (
	nodeUserPrefix     = "system:node:"
	groupNodes         = "system:nodes"
	groupBootstrap     = "system:bootstrappers"
	groupMasters       = "system:masters"
	approvedReason     = "AutoApproved"
	failedReason       = "SignerValidationFailure"
	defaultValidity    = 365 * 24 * time.Hour // kube-controller-manager's --cluster-signing-duration
	minimumValidity    = 10 * time.Minute     // upstream's floor for spec.expirationSeconds
	clientApprovalMsg  = "Auto approving kubelet client certificate after SubjectAccessReview."
	servingApprovalMsg = "Auto approving kubelet serving certificate for its own node."
)

// action is what sync does with one CSR.
type action int

const (
	actionNone action = iota
	actionApprove
	actionSign
	actionFail
)

// decision is what decide found: the action, and the message of the
// condition it adds.
type decision struct {
	action  action
	message string
}

// decide says what to do next with csr: nothing (not ours, pending for a
// human, already finished), approve it, sign it, or mark it failed.
func decide(csr *certificatesv1.CertificateSigningRequest) decision {
	if isFinished(csr) || !isNodeSigner(csr.Spec.SignerName) {
		return decision{}
	}
	req, err := parseRequest(csr.Spec.Request)
	if err == nil {
		err = validateNodeRequest(csr, req)
	}
	approved := hasCondition(csr, certificatesv1.CertificateApproved)
	switch {
	case err != nil && approved:
		return decision{actionFail, err.Error()}
	case err != nil:
		return decision{} // an approver does not approve what the signer would refuse
	case approved:
		return decision{action: actionSign}
	}
	if msg, ok := autoApprove(csr, req); ok {
		return decision{actionApprove, msg}
	}
	return decision{}
}

func isNodeSigner(name string) bool {
	return name == certificatesv1.KubeAPIServerClientKubeletSignerName || name == certificatesv1.KubeletServingSignerName
}

// isFinished: denied, failed or issued.
func isFinished(csr *certificatesv1.CertificateSigningRequest) bool {
	return len(csr.Status.Certificate) > 0 || hasCondition(csr, certificatesv1.CertificateDenied) ||
		hasCondition(csr, certificatesv1.CertificateFailed)
}

func hasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && c.Status != corev1.ConditionFalse {
			return true
		}
	}
	return false
}

func parseRequest(pemBytes []byte) (*x509.CertificateRequest, error) {
	blk, _ := pem.Decode(pemBytes)
	if blk == nil || blk.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate request: %w", err)
	}
	return req, nil
}

// validateNodeRequest checks a request against its signer's rules, as
// kube-apiserver's validation of the two kubelet signers: subject
// system:node:<name> in exactly system:nodes, the usages of a client or a
// server, and names only for a serving certificate.
func validateNodeRequest(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) error {
	if !strings.HasPrefix(req.Subject.CommonName, nodeUserPrefix) || len(req.Subject.CommonName) == len(nodeUserPrefix) {
		return fmt.Errorf("subject common name %q does not begin with %q", req.Subject.CommonName, nodeUserPrefix)
	}
	if !slices.Equal(req.Subject.Organization, []string{groupNodes}) {
		return fmt.Errorf("subject organization %v is not exactly [%s]", req.Subject.Organization, groupNodes)
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return errors.New("email and URI subjectAltNames are not allowed")
	}
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		if len(req.DNSNames) > 0 || len(req.IPAddresses) > 0 {
			return errors.New("DNS and IP subjectAltNames are not allowed in a client certificate")
		}
		return checkUsages(csr.Spec.Usages, certificatesv1.UsageClientAuth)
	default:
		if len(req.DNSNames) == 0 && len(req.IPAddresses) == 0 {
			return errors.New("a serving certificate needs at least one DNS or IP subjectAltName")
		}
		return checkUsages(csr.Spec.Usages, certificatesv1.UsageServerAuth)
	}
}

// checkUsages: the usage the signer is for, optionally with digital
// signature and key encipherment, nothing else.
func checkUsages(usages []certificatesv1.KeyUsage, required certificatesv1.KeyUsage) error {
	if !slices.Contains(usages, required) {
		return fmt.Errorf("usages %v lack %q", usages, required)
	}
	for _, u := range usages {
		if u != required && u != certificatesv1.UsageDigitalSignature && u != certificatesv1.UsageKeyEncipherment {
			return fmt.Errorf("usage %q is not allowed", u)
		}
	}
	return nil
}

// autoApprove: a node's client certificate asked for with a bootstrap
// token (nodeclient) or by the node itself (selfnodeclient), a node's
// serving certificate asked for by the node itself, or either asked for by
// a cluster admin (an agent joined with the admin kubeconfig).
func autoApprove(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) (string, bool) {
	self := csr.Spec.Username == req.Subject.CommonName && slices.Contains(csr.Spec.Groups, groupNodes)
	admin := slices.Contains(csr.Spec.Groups, groupMasters)
	if csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName {
		return clientApprovalMsg, self || admin || slices.Contains(csr.Spec.Groups, groupBootstrap)
	}
	return servingApprovalMsg, self || admin
}

// condition is a new True condition of type t.
func condition(t certificatesv1.RequestConditionType, reason, message string, now time.Time) certificatesv1.CertificateSigningRequestCondition {
	ts := metav1.NewTime(now)
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason,
		Message: message, LastUpdateTime: ts, LastTransitionTime: ts}
}

// validity is how long the certificate of csr lasts: the signer's
// duration, shortened to spec.expirationSeconds (no less than ten
// minutes), as kube-controller-manager's signer does.
func validity(csr *certificatesv1.CertificateSigningRequest) time.Duration {
	if s := csr.Spec.ExpirationSeconds; s != nil {
		d := max(time.Duration(*s)*time.Second, minimumValidity)
		return min(d, defaultValidity)
	}
	return defaultValidity
}

// extUsages maps a CSR's usages to the certificate's extended key usages.
func extUsages(usages []certificatesv1.KeyUsage) []x509.ExtKeyUsage {
	var out []x509.ExtKeyUsage
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageClientAuth:
			out = append(out, x509.ExtKeyUsageClientAuth)
		case certificatesv1.UsageServerAuth:
			out = append(out, x509.ExtKeyUsageServerAuth)
		}
	}
	return out
}
