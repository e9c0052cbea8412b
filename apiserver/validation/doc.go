// Package validation checks API objects the way kube-apiserver and the
// JobSet webhook do, returning field errors with upstream's paths and
// messages. Every function is pure: it reads the objects and returns errors.
package validation
