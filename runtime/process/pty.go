package process

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/batchlet/batchlet/runtime"
)

// hostPTMX is the agent's own pseudo-terminal multiplexer.
const hostPTMX = "/dev/ptmx"

// containerPTMX is the multiplexer of the devpts instance a container's
// /dev/pts is (PID 1's view), so that an exec's terminal has a name there.
func containerPTMX(pid int) string {
	return "/proc/" + strconv.Itoa(pid) + "/root/dev/pts/ptmx"
}

// openPTY returns a new pseudo-terminal pair of ptmx's devpts instance;
// the slave is opened through the master (TIOCGPTPEER), by no path.
func openPTY(ptmx string) (master, slave *os.File, err error) {
	flags := os.O_RDWR | syscall.O_NOCTTY | syscall.O_CLOEXEC
	if ptmx != hostPTMX {
		flags |= syscall.O_NOFOLLOW
	}
	m, err := os.OpenFile(ptmx, flags, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", ptmx, err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	s, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		m.Close()
		return nil, nil, fmt.Errorf("open pty: %w", errno)
	}
	return m, os.NewFile(s, "pty"), nil
}

// startWithTTY starts cmd on a pseudo-terminal of ptmx wired to the exec streams,
// following resize requests, as the leader of a new session whose
// controlling terminal it is when ctty (else the command it starts takes
// the terminal); wait waits for it and its output.
func startWithTTY(cmd *exec.Cmd, s runtime.ExecStreams, ptmx string, ctty bool) (wait func() error, err error) {
	master, slave, err := openPTY(ptmx)
	if err != nil {
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: ctty, Ctty: 0}
	err = cmd.Start()
	slave.Close()
	if err != nil {
		master.Close()
		return nil, err
	}
	if s.Resize != nil {
		go func() {
			for size := range s.Resize {
				_ = unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Height, Col: size.Width})
			}
		}()
	}
	if s.Stdin != nil {
		go func() { _, _ = io.Copy(master, s.Stdin) }()
	}
	var wg sync.WaitGroup
	out := s.Stdout
	if out == nil {
		out = io.Discard
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(out, master) // ends with EIO once the command exits
	}()
	return func() error {
		defer master.Close()
		err := cmd.Wait()
		wg.Wait()
		return err
	}, nil
}
