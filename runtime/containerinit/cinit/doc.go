// Package cinit is the container init written in C, linked into
// batchlet-shim: a constructor that runs before the Go runtime starts and,
// when the process is a container init whose argv carries a plan
// (containerinit.CPlan: a host container), does the init's work itself and
// execs the container's command, so that no Go runtime starts for the
// container; runc starts its containers the same way (nsexec). For
// anything else the constructor returns and the process goes on as Go: the
// shim, the supervisor, an image container's init, the exec mode.
//
// It makes the same system calls in the same order as the Go init
// (runtime/containerinit) and reports failures on the status descriptor
// with the same messages and exit code; cinit_test.go runs specs through
// both and compares what the containers see. Without cgo (CGO_ENABLED=0)
// the package is empty and the Go init starts every container.
package cinit
