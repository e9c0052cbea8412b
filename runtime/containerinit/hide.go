package containerinit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// hiddenPaths are the paths hide covers in a host container's mount
// namespace: the host's /tmp where the container still sees it (HostTmp),
// and those of hidden outside /tmp (the private /tmp hides the others
// already).
func hiddenPaths(hidden []string) []string {
	out := []string{HostTmp}
	for _, h := range hidden {
		if InPod(h) == h && h != "/" {
			out = append(out, h)
		}
	}
	return out
}

// hide covers path with an empty read-only tmpfs (a directory) or
// /dev/null (a file), then binds back the directories of keep that lie
// under it, at their own paths. A path that does not exist is skipped.
func hide(path string, keep []string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if !st.IsDir() {
		return bindMount("/dev/null", path, true)
	}
	// The kept directories are opened before the tmpfs covers them, and
	// bound from their descriptors.
	var fds []int
	var kept []string
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	for _, k := range keep {
		if !strings.HasPrefix(k, path+"/") {
			continue
		}
		fd, err := syscall.Open(k, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("keep %s visible: %w", k, err)
		}
		fds, kept = append(fds, fd), append(kept, k)
	}
	if err := syscall.Mount("tmpfs", path, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=755,size=64k"); err != nil {
		return fmt.Errorf("hide %s: %w", path, err)
	}
	for i, k := range kept {
		if err := os.MkdirAll(k, 0o755); err != nil {
			return fmt.Errorf("keep %s visible: %w", k, err)
		}
		if err := syscall.Mount("/proc/self/fd/"+strconv.Itoa(fds[i]), k, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("keep %s visible: %w", k, err)
		}
	}
	flags := uintptr(syscall.MS_REMOUNT | syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC)
	if err := syscall.Mount("", path, "", flags, ""); err != nil {
		return fmt.Errorf("hide %s: make it read-only: %w", path, err)
	}
	return nil
}
