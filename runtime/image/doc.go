// Package image keeps container images on the node: a content-addressed
// store under the data dir, pulls from registries with
// github.com/google/go-containerregistry, offline import of OCI layouts and
// docker-save tarballs, unpacked layers shared by every container that uses
// them, and garbage collection of what no image references.
//
// Layout of the store's root (<data-dir>/images):
//
//	oci/                 an OCI image layout: index.json names the images
//	                     (annotation org.opencontainers.image.ref.name holds
//	                     the full reference), blobs/sha256/<hex> holds
//	                     manifests, configs and compressed layers by digest
//	layers/sha256/<hex>  each layer unpacked once, named by its diff ID (the
//	                     digest of the uncompressed tar), in overlayfs form
//	                     (whiteouts are 0/0 character devices, opaque
//	                     directories carry trusted.overlay.opaque=y)
//	lock                 flock'd by every change, so `batchlet images load`
//	                     and a running server can share the store
//
// The Puller applies the kubelet's image pull policy and reports its
// statuses and events (Pulling, Pulled, ErrImagePull, ImagePullBackOff,
// ErrImageNeverPull) with upstream's messages.
package image
