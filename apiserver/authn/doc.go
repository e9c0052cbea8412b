// Package authn authenticates API requests as kube-apiserver's union of
// authenticators does: a client certificate verified against the client
// CA (x509), then a bearer token tried against the configured token map,
// bootstrap tokens (Secrets in kube-system) and service-account tokens
// this server issued (bound to a service account and maybe a pod that
// must still exist). Impersonate then applies kube-apiserver's
// impersonation filter (Impersonate-* headers, authorized as the
// impersonate verb).
//
// It reads the objects a token refers to through Getter, so it knows
// nothing of the store; package apiserver plugs it in front of its
// handlers behind the endpoints seam.
package authn
