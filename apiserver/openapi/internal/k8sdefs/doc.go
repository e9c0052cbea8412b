// Package k8sdefs holds the OpenAPI definitions openapi-gen generated from the
// Kubernetes API types batchlet serves (regenerate with hack/update-openapi.sh).
package k8sdefs
