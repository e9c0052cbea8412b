package process

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/batchlet/batchlet/runtime/shim"
)

// supervisorClient is the agent's side of the node's shim supervisor
// (runtime/shim, SupervisorArg0): one long-lived process that serves every
// container as its own shim would, which saves a Go process start per
// container. The agent holds a connection to it for its life (so it stays)
// and starts one when none answers: at the first container, or after it
// died (its containers died with it and are counted as lost on adoption).
type supervisorClient struct {
	helper string // the binary (see Runtime.helper)
	sock   string
	// addr is sock's address (shim.SockAddr), through sockDir when sock
	// is too long for one.
	addr    string
	sockDir *os.File
	log     *slog.Logger

	mu      sync.Mutex
	control *os.File // the agent's connection; nil: none
	pid     int      // the supervisor this agent started, 0 if none
}

// newSupervisorClient prepares the supervisor of root for binary helper. Its socket's name carries the binary's
// identity, so an agent of another build never talks to a supervisor
// speaking another protocol: that one serves its containers to their end
// and then exits.
func newSupervisorClient(root, helper string, log *slog.Logger) (*supervisorClient, error) {
	st, err := os.Stat(helper)
	if err != nil {
		return nil, fmt.Errorf("shim supervisor: %w", err)
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%d", st.Size(), st.ModTime().UnixNano(), st.Sys().(*syscall.Stat_t).Ino)
	sock := filepath.Join(root, fmt.Sprintf(".supervisor-%016x.sock", h.Sum64()))
	addr, dir, err := shim.SockAddr(sock)
	if err != nil {
		return nil, fmt.Errorf("shim supervisor: %w", err)
	}
	return &supervisorClient{helper: helper, sock: sock, addr: addr, sockDir: dir, log: log}, nil
}

// startContainer hands the supervisor one attempt (its spec at specPath
// and the shim's descriptors fds: lock, status, stdin, tee out, tee err);
// exited is closed once the supervisor is done with it (its end recorded)
// or gone.
func (s *supervisorClient) startContainer(specPath string, fds []int, exited chan<- struct{}) error {
	conn, err := s.connect()
	if err != nil {
		return err
	}
	msg := append([]byte{shim.MsgContainer}, specPath...)
	if err := syscall.Sendmsg(int(conn.Fd()), msg, syscall.UnixRights(fds...), nil, 0); err != nil {
		conn.Close()
		return fmt.Errorf("hand the container to the shim supervisor: %w", err)
	}
	go func() {
		_, _ = io.Copy(io.Discard, conn) // EOF: served, or the supervisor died
		conn.Close()
		close(exited)
	}()
	return nil
}

// connect opens a connection for one container. A supervisor that does
// not answer though this agent holds its connection died (before watch
// noticed): it is forgotten and a new one started.
func (s *supervisorClient) connect() (*os.File, error) {
	for try := 0; ; try++ {
		if err := s.ensure(); err != nil {
			return nil, err
		}
		conn, err := s.dial()
		if err == nil || try > 0 {
			return conn, err
		}
		s.mu.Lock()
		if s.control != nil {
			s.control.Close()
			s.control = nil
		}
		s.mu.Unlock()
	}
}

// ensure connects to the supervisor, starting one when none answers.
func (s *supervisorClient) ensure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.control != nil {
		return nil
	}
	conn, err := s.hello()
	if err != nil {
		if err := s.spawn(); err != nil {
			return err
		}
		if conn, err = s.hello(); err != nil {
			return err
		}
	}
	s.control = conn
	go s.watch(conn)
	return nil
}

// watch forgets the connection once the supervisor closes it (it died):
// the next container starts a new one.
func (s *supervisorClient) watch(conn *os.File) {
	_, _ = io.Copy(io.Discard, conn)
	s.mu.Lock()
	if s.control == conn {
		s.control = nil
		s.log.Warn("the shim supervisor ended: its running containers ended with it; a new one starts with the next container", "socket", s.sock)
	}
	s.mu.Unlock()
	conn.Close()
}

// hello opens the agent's connection and waits for the answer.
func (s *supervisorClient) hello() (*os.File, error) {
	conn, err := s.dial()
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write([]byte{shim.MsgAgent}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("shim supervisor: %w", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 8)
	n, err := conn.Read(buf)
	if err != nil || string(buf[:n]) != "ok" {
		conn.Close()
		return nil, fmt.Errorf("shim supervisor did not answer: %v", err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	return conn, nil
}

// dial connects to the supervisor's socket; the connection is read through
// Go's poller.
func (s *supervisorClient) dial() (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("shim supervisor: %w", err)
	}
	// A non-blocking connect to a listening Unix socket completes at once
	// (or fails with EAGAIN when its backlog is full).
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: s.addr})
		if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("connect to the shim supervisor: %w", err)
	}
	return os.NewFile(uintptr(fd), "supervisor"), nil
}

// spawn starts a supervisor, in a session of its own so that it outlives
// this agent, and waits until it listens.
func (s *supervisorClient) spawn() error {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start the shim supervisor: %w", err)
	}
	defer readyR.Close()
	logFile, err := os.OpenFile(s.sock+".log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		readyW.Close()
		return fmt.Errorf("start the shim supervisor: %w", err)
	}
	defer logFile.Close()
	cmd := &exec.Cmd{Path: s.helper, Args: []string{shim.SupervisorArg0, s.sock}, Dir: "/",
		Stdout: logFile, Stderr: logFile, ExtraFiles: []*os.File{readyW},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		return fmt.Errorf("start the shim supervisor: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reaped while it is this agent's child
	msg, _ := io.ReadAll(readyR)
	if len(msg) > 0 {
		return fmt.Errorf("start the shim supervisor: %s", msg)
	}
	s.pid = cmd.Process.Pid
	s.log.Info("started the shim supervisor", "pid", s.pid, "socket", s.sock)
	return nil
}
