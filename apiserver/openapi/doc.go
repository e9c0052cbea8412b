// Package openapi serves the OpenAPI v2 document (/openapi/v2) and the OpenAPI
// v3 discovery index and per-group-version documents (/openapi/v3...) of
// batchlet's API server, so kubectl can validate, patch and explain.
//
// The documents are built at generation time (hack/update-openapi.sh) from
// the Go API types and the served resources of package registry, the list
// discovery reads, and embedded; serving them costs nothing at start-up.
package openapi
