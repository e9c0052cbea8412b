//go:build !cgo || !linux

package cinit

// Enabled reports whether this build has the C init.
const Enabled = false
