// Package patch is the API server's patch engine: it turns a PATCH
// request's body and the stored object into the patched object, for every
// patch type kube-apiserver accepts — JSON patch (RFC 6902), JSON merge
// patch (RFC 7386), strategic merge patch and server-side apply.
//
// It is its own package because it is pure object transformation: no
// storage, no HTTP, no caches. The server gives it the current object and,
// through Codec, the two things only the server knows (the served JSON of
// that object, shared with its watches, and how to decode the result with
// the request's field validation), then stores what Apply returns.
//
// Strategic merge has two paths with one result. The typed path (typed.go)
// merges the patch into the Go object field by field, so the node agent's
// status patch and the Job controller's finalizer removal cost no JSON
// round trip; whenever a patch is not plain (a directive the typed merge
// does not do, a field the type lacks, a value that may be an error) it
// refuses and the general path — apimachinery's strategic merge of the
// served JSON, then a strict decode — gives upstream's exact result,
// errors and warnings. The typed path decodes plain scalars and the values
// a patch brings new without the JSON decoder (scalar.go), declining to
// the strict decoder for anything else. The fuzz test holds the two paths
// to the same answer.
//
// Server-side apply (apply.go) uses apimachinery's managedfields, one
// cached field manager per resource and subresource.
package patch
