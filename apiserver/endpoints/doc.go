// Package endpoints is the protocol layer of the API server's HTTP
// endpoints, as k8s.io/apiserver/pkg/endpoints is upstream: what a request
// URL names (RequestInfo), which representation the client accepts
// (Negotiate: objects, Tables, PartialObjectMetadata; protobuf), how an
// error becomes a metav1.Status answer, and the authentication and
// authorization seam every request passes (Authenticator, Authorizer, the
// SubjectAccessReview attributes of a request, upstream's 403 message).
//
// It knows no resource and no storage: the handlers in package apiserver
// use it to read requests and write answers, and implementations of the
// seam (apiserver/rbac, the node authorizer, token maps) plug into it.
package endpoints
