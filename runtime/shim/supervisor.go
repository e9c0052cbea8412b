package shim

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The supervisor is one long-lived shim per node (argv[0] SupervisorArg0,
// argv[1] the path of its socket) that does for every container what a
// shim of its own does for one (serve), so a container start costs one Go
// process start (the container init) instead of two. It runs in a session
// of its own and outlives the agent that started it: a restarted agent
// connects to it again. Its containers' parent-death signal ties each to
// the supervisor's thread that waits for it, so if the supervisor itself
// is killed its containers die with it and a restarted agent counts them
// as lost (runtime/process classifyAttempt), as it does for one shim.
//
// The protocol, on a SOCK_SEQPACKET Unix socket (0600, in the runtime's
// root directory, which containers do not see), one connection each:
//
//	'A'               an agent: answered "ok", then held open for the
//	                  agent's life; the supervisor exits once no agent
//	                  holds one and no container runs
//	'C' <spec path>   a container, with five descriptors (SCM_RIGHTS):
//	                  the attempt's locked spec file, the status pipe, the
//	                  container's stdin, the two tee pipes (as a shim's
//	                  LockFD..TeeErrFD); the supervisor closes the
//	                  connection once the container's end is on record
const SupervisorArg0 = "batchlet-supervisor"

// SupervisorReadyFD is the pipe on which a starting supervisor reports
// that it listens (EOF) or why it cannot (a message).
const SupervisorReadyFD = 3

// Message kinds of the supervisor's protocol.
const (
	MsgAgent     = 'A'
	MsgContainer = 'C'
)

// attemptFDs is how many descriptors a container message carries.
const attemptFDs = 5

// supervisorIdleGrace is how long a supervisor nobody connected to waits
// before it exits (its agent died before connecting).
const supervisorIdleGrace = time.Minute

// supervisor is the state of a running supervisor.
type supervisor struct {
	listener int
	uid      int
	spawn    *spawner

	mu         sync.Mutex
	agents     int
	containers int
	closing    bool
}

// supervise is the supervisor's main; it returns its exit code.
func supervise(sockPath string) int {
	setName(SupervisorArg0)
	syscall.CloseOnExec(SupervisorReadyFD)
	ready := os.NewFile(SupervisorReadyFD, "ready")
	lfd, err := ListenSeqpacket(sockPath)
	if err != nil {
		fmt.Fprint(ready, err.Error())
		return 1
	}
	ready.Close() // EOF: listening
	sv := &supervisor{listener: lfd, uid: os.Getuid(), spawn: newSpawner()}
	time.AfterFunc(supervisorIdleGrace, sv.exitIfIdle)
	for {
		fd, _, err := syscall.Accept4(lfd, syscall.SOCK_CLOEXEC)
		if err != nil {
			if errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.ECONNABORTED) {
				continue
			}
			sv.mu.Lock()
			closing := sv.closing
			sv.mu.Unlock()
			if closing {
				select {} // exitIfIdle exits the process
			}
			// Never fatal (EMFILE, ENOMEM...): the running containers
			// would die with the supervisor.
			fmt.Fprintf(os.Stderr, "supervisor: accept: %v\n", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go sv.handle(fd)
	}
}

// MaxSockPath is the longest path a Unix socket address holds.
const MaxSockPath = 107

// SockAddr is the address of the socket at path: path itself, or, when it
// is longer than an address holds (a deep data dir), the same file through
// a descriptor of its directory (/proc/self/fd/N/name), dir, which the
// caller keeps open while it uses the address.
func SockAddr(path string) (addr string, dir *os.File, err error) {
	if len(path) <= MaxSockPath {
		return path, nil, nil
	}
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "", nil, fmt.Errorf("socket path %s: not absolute", path)
	}
	dir, err = os.OpenFile(path[:i], os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return "", nil, fmt.Errorf("socket path: %w", err)
	}
	addr = "/proc/self/fd/" + strconv.Itoa(int(dir.Fd())) + path[i:]
	if len(addr) > MaxSockPath {
		dir.Close()
		return "", nil, fmt.Errorf("socket path %s: its name is longer than a Unix address holds", path)
	}
	return addr, dir, nil
}

// ListenSeqpacket listens on a new Unix socket at path (replacing what is
// there), reachable by its owner only.
func ListenSeqpacket(path string) (int, error) {
	addr, dir, err := SockAddr(path)
	if err != nil {
		return -1, err
	}
	if dir != nil {
		defer dir.Close()
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("supervisor socket: %w", err)
	}
	_ = os.Remove(path)
	old := syscall.Umask(0o177)
	err = syscall.Bind(fd, &syscall.SockaddrUnix{Name: addr})
	syscall.Umask(old)
	if err == nil {
		err = syscall.Listen(fd, 128)
	}
	if err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("supervisor socket %s: %w", path, err)
	}
	return fd, nil
}

// handle serves one connection.
func (sv *supervisor) handle(fd int) {
	defer syscall.Close(fd)
	if cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED); err != nil || int(cred.Uid) != sv.uid {
		return
	}
	buf := make([]byte, 4096)
	oob := make([]byte, syscall.CmsgSpace(attemptFDs*4))
	n, oobn, _, _, err := syscall.Recvmsg(fd, buf, oob, syscall.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		return
	}
	fds := receivedFDs(oob[:oobn])
	switch buf[0] {
	case MsgAgent:
		closeFDs(fds)
		sv.serveAgent(fd)
	case MsgContainer:
		if len(fds) != attemptFDs {
			closeFDs(fds)
			return
		}
		sv.serveContainer(string(buf[1:n]), fds)
	default:
		closeFDs(fds)
	}
}

// serveAgent answers an agent and holds its connection until it closes.
func (sv *supervisor) serveAgent(fd int) {
	sv.mu.Lock()
	sv.agents++
	sv.mu.Unlock()
	if _, err := syscall.Write(fd, []byte("ok")); err == nil {
		buf := make([]byte, 64)
		for {
			n, err := syscall.Read(fd, buf)
			if n > 0 || errors.Is(err, syscall.EINTR) {
				continue
			}
			break
		}
	}
	sv.mu.Lock()
	sv.agents--
	sv.mu.Unlock()
	sv.exitIfIdle()
}

// serveContainer runs one attempt as its own shim would.
func (sv *supervisor) serveContainer(specPath string, fds []int) {
	sv.mu.Lock()
	sv.containers++
	sv.mu.Unlock()
	files := attemptFiles{lock: os.NewFile(uintptr(fds[0]), specPath), status: os.NewFile(uintptr(fds[1]), "status"),
		stdin: os.NewFile(uintptr(fds[2]), "stdin"), teeOut: fds[3], teeErr: fds[4]}
	serve(specPath, files, 0, 0, sv.spawn)
	sv.mu.Lock()
	sv.containers--
	sv.mu.Unlock()
	sv.exitIfIdle()
}

// exitIfIdle ends the supervisor when no agent holds it and no container
// runs. The listener is shut first, under the lock, so no connection is
// accepted that would not be served.
func (sv *supervisor) exitIfIdle() {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.agents > 0 || sv.containers > 0 || sv.closing {
		return
	}
	sv.closing = true
	_ = syscall.Shutdown(sv.listener, syscall.SHUT_RDWR)
	os.Exit(0)
}

// receivedFDs are the descriptors of a message's control data.
func receivedFDs(oob []byte) []int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := syscall.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		syscall.Close(fd)
	}
}
