package containerinit

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// inMountNamespace runs the calling test again in a child process with a
// mount namespace of its own (the mounts it makes vanish with it), where
// os.Getenv(inMountNS) is "1".
const inMountNS = "CONTAINERINIT_TEST_IN_MOUNT_NS"

func inMountNamespace(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), inMountNS+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// TestDevNodes: /dev's nodes are character devices of runc's numbers and
// mode 0666 whether mknod makes them or, where it is refused, the host's
// are bound.
func TestDevNodes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mknod func(string, uint32, int) error
		bound bool
	}{
		{"mknod", unix.Mknod, false},
		{"mknod refused", func(string, uint32, int) error { return unix.EPERM }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if os.Getenv(inMountNS) != "1" {
				inMountNamespace(t)
				return
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				t.Fatal(err)
			}
			dev := t.TempDir()
			if err := unix.Mount("tmpfs", dev, "tmpfs", 0, "mode=755"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = unix.Unmount(dev, unix.MNT_DETACH) })
			hostDev, err := unix.Open("/dev", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(hostDev)
			if err := makeDevNodes(dev, hostDev, tc.mknod); err != nil {
				t.Fatal(err)
			}
			for _, n := range devNodes {
				var st unix.Stat_t
				p := filepath.Join(dev, n.name)
				if err := unix.Stat(p, &st); err != nil {
					t.Fatal(err)
				}
				if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(n.major, n.minor) {
					t.Errorf("%s: mode %o rdev %x, want a character device %d:%d", n.name, st.Mode, st.Rdev, n.major, n.minor)
				}
				if !tc.bound && st.Mode&0o777 != 0o666 {
					t.Errorf("%s: mode %o, want 0666", n.name, st.Mode&0o777)
				}
				if err := unix.Unmount(p, 0); (err == nil) != tc.bound {
					t.Errorf("%s: unmount: %v, want a bind mount: %v", n.name, err, tc.bound)
				}
			}
		})
	}
}
