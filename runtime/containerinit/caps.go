package containerinit

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultCaps are the capabilities a container keeps when its
// securityContext adds or drops none: containerd's and Docker's default
// set. CAP_SYS_ADMIN (mount, umount), CAP_SYS_PTRACE, CAP_SYS_MODULE,
// CAP_SYS_RAWIO and the rest stay with the agent, so a root container
// cannot lift the mounts that hide the agent's files from it.
var DefaultCaps = []string{"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
	"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"}

// capNumbers maps the names Kubernetes uses (without CAP_) to numbers.
var capNumbers = map[string]int{
	"CHOWN": unix.CAP_CHOWN, "DAC_OVERRIDE": unix.CAP_DAC_OVERRIDE, "DAC_READ_SEARCH": unix.CAP_DAC_READ_SEARCH,
	"FOWNER": unix.CAP_FOWNER, "FSETID": unix.CAP_FSETID, "KILL": unix.CAP_KILL, "SETGID": unix.CAP_SETGID,
	"SETUID": unix.CAP_SETUID, "SETPCAP": unix.CAP_SETPCAP, "LINUX_IMMUTABLE": unix.CAP_LINUX_IMMUTABLE,
	"NET_BIND_SERVICE": unix.CAP_NET_BIND_SERVICE, "NET_BROADCAST": unix.CAP_NET_BROADCAST,
	"NET_ADMIN": unix.CAP_NET_ADMIN, "NET_RAW": unix.CAP_NET_RAW, "IPC_LOCK": unix.CAP_IPC_LOCK,
	"IPC_OWNER": unix.CAP_IPC_OWNER, "SYS_MODULE": unix.CAP_SYS_MODULE, "SYS_RAWIO": unix.CAP_SYS_RAWIO,
	"SYS_CHROOT": unix.CAP_SYS_CHROOT, "SYS_PTRACE": unix.CAP_SYS_PTRACE, "SYS_PACCT": unix.CAP_SYS_PACCT,
	"SYS_ADMIN": unix.CAP_SYS_ADMIN, "SYS_BOOT": unix.CAP_SYS_BOOT, "SYS_NICE": unix.CAP_SYS_NICE,
	"SYS_RESOURCE": unix.CAP_SYS_RESOURCE, "SYS_TIME": unix.CAP_SYS_TIME, "SYS_TTY_CONFIG": unix.CAP_SYS_TTY_CONFIG,
	"MKNOD": unix.CAP_MKNOD, "LEASE": unix.CAP_LEASE, "AUDIT_WRITE": unix.CAP_AUDIT_WRITE,
	"AUDIT_CONTROL": unix.CAP_AUDIT_CONTROL, "SETFCAP": unix.CAP_SETFCAP, "MAC_OVERRIDE": unix.CAP_MAC_OVERRIDE,
	"MAC_ADMIN": unix.CAP_MAC_ADMIN, "SYSLOG": unix.CAP_SYSLOG, "WAKE_ALARM": unix.CAP_WAKE_ALARM,
	"BLOCK_SUSPEND": unix.CAP_BLOCK_SUSPEND, "AUDIT_READ": unix.CAP_AUDIT_READ, "PERFMON": unix.CAP_PERFMON,
	"BPF": unix.CAP_BPF, "CHECKPOINT_RESTORE": unix.CAP_CHECKPOINT_RESTORE,
}

// capSet is the set of capabilities a container keeps: the default set
// less spec's drops, plus its additions (so "drop ALL, add X" keeps X, as
// containerd applies them; "ALL" stands for every one), or every one for a
// privileged container.
func capSet(spec Spec) (map[int]bool, error) {
	keep := map[int]bool{}
	all := func() {
		for _, n := range capNumbers {
			keep[n] = true
		}
	}
	if spec.Privileged {
		all()
		return keep, nil
	}
	for _, name := range DefaultCaps {
		keep[capNumbers[name]] = true
	}
	for _, name := range spec.CapDrop {
		if strings.EqualFold(name, "ALL") {
			clear(keep)
			continue
		}
		if n, ok := capNumbers[strings.TrimPrefix(strings.ToUpper(name), "CAP_")]; ok {
			delete(keep, n)
		}
	}
	for _, name := range spec.CapAdd {
		if strings.EqualFold(name, "ALL") {
			all()
			continue
		}
		n, ok := capNumbers[strings.TrimPrefix(strings.ToUpper(name), "CAP_")]
		if !ok {
			return nil, fmt.Errorf("unknown capability %q to add", name)
		}
		keep[n] = true
	}
	return keep, nil
}

// limitCaps narrows the bounding set to keep and clears the inheritable
// and ambient sets, so that the command gets at most keep on exec (all of
// it as root, none as another user). The effective set is left alone: the
// init still needs CAP_SETUID and CAP_SETGID to take the container's ids.
func limitCaps(keep map[int]bool) error {
	for n := 0; n < 64; n++ {
		if keep[n] {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(n), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the kernel's last capability
			}
			return fmt.Errorf("drop capability %d: %w", n, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	return nil
}
