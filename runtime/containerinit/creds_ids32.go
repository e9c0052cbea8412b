//go:build linux && !386 && !arm

package containerinit

import "golang.org/x/sys/unix"

// The system calls that take 32-bit ids.
const (
	sysSetgroups = unix.SYS_SETGROUPS
	sysSetresgid = unix.SYS_SETRESGID
	sysSetresuid = unix.SYS_SETRESUID
)
