package registry

import (
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CertificateSigningRequests is certificates.k8s.io/v1
// certificatesigningrequests: how node agents get their client and serving
// certificates. The requester's identity (spec.username, groups, uid,
// extra) is stamped by the server on create; approval and status
// subresources carry the conditions and the signed certificate.
func CertificateSigningRequests() *Resource {
	return &Resource{
		GVR: certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), Kind: "CertificateSigningRequest",
		Singular: "certificatesigningrequest", ShortNames: []string{"csr"}, Subresources: []string{"approval", "status"},
		New:     func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
		NewList: func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*certificatesv1.CertificateSigningRequest).Status = certificatesv1.CertificateSigningRequestStatus{}
		},
		// The spec is immutable and the status is written through the
		// subresources only.
		PrepareForUpdate: func(obj, old runtime.Object) {
			csr, prev := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
			csr.Spec, csr.Status = prev.Spec, prev.Status
		},
		PrepareForStatusUpdate: func(obj, old runtime.Object) {
			obj.(*certificatesv1.CertificateSigningRequest).Spec = old.(*certificatesv1.CertificateSigningRequest).Spec
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return validateCSR(obj.(*certificatesv1.CertificateSigningRequest))
		},
		Columns: []metav1.TableColumnDefinition{
			nameColumn(), ageColumn(),
			col("SignerName", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]),
			col("Requestor", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["username"]),
			col("RequestedDuration", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]),
			col("Condition", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
		},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow {
			return csrRow(obj.(*certificatesv1.CertificateSigningRequest), now)
		},
	}
}

func validateCSR(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if len(csr.Spec.Request) == 0 {
		errs = append(errs, field.Required(spec.Child("request"), ""))
	}
	if csr.Spec.SignerName == "" {
		errs = append(errs, field.Required(spec.Child("signerName"), ""))
	}
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), ""))
	}
	return errs
}

// csrRow is kubectl's CSR line: the conditions joined by commas, plus
// Issued once a certificate is there.
func csrRow(csr *certificatesv1.CertificateSigningRequest, now time.Time) metav1.TableRow {
	var conds []string
	for _, c := range csr.Status.Conditions {
		if c.Status == corev1.ConditionTrue || c.Status == "" {
			conds = append(conds, string(c.Type))
		}
	}
	if len(csr.Status.Certificate) > 0 {
		conds = append(conds, "Issued")
	}
	condition := "Pending"
	if len(conds) > 0 {
		condition = strings.Join(conds, ",")
	}
	duration := "<none>"
	if s := csr.Spec.ExpirationSeconds; s != nil {
		duration = (time.Duration(*s) * time.Second).String()
	}
	return metav1.TableRow{Cells: []interface{}{csr.Name, since(csr.CreationTimestamp, now), csr.Spec.SignerName,
		csr.Spec.Username, duration, condition}}
}
