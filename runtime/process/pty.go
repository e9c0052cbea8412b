package process

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/batchlet/batchlet/runtime"
)

// openPTY returns a new pseudo-terminal pair.
func openPTY() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("pty number: %w", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	return m, s, nil
}

// startWithTTY starts cmd on a pseudo-terminal wired to the exec streams,
// following resize requests, as the leader of a new session whose
// controlling terminal it is when ctty (else the command it starts takes
// the terminal); wait waits for it and its output.
func startWithTTY(cmd *exec.Cmd, s runtime.ExecStreams, ctty bool) (wait func() error, err error) {
	master, slave, err := openPTY()
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
