// Package build turns the generated Go type definitions and the served
// resources of package registry (the list discovery reads: resources, their
// verbs and subresources) into OpenAPI v2 and v3 documents. It runs at
// generation time only (hack/update-openapi.sh); the server embeds its
// serialized output.
package build
