// Package authz decides API requests, as kube-apiserver's authorizer chain
// does: the Node authorizer (a node's agent may read and write what its
// own pods need) in front of RBAC (apiserver/rbac) when RBAC is on, or the
// configured Authorizer otherwise; and it turns a denial into upstream's
// Forbidden answer for resource and non-resource requests.
//
// It reads the objects a decision needs (RBAC objects, pods bound to a
// node) through Reader, so it knows nothing of the store.
package authz
