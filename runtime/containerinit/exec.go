package containerinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	goruntime "runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExecArg0 is argv[0] of the container init in exec mode (kubectl exec):
// it joins the namespaces of a running container's PID 1 (Spec.Pid) and
// starts argv there as the container's command starts, with its user,
// groups, capabilities, no_new_privs and /proc, in its cgroup, then waits
// for it and exits with its exit code (128+n for signal n), as runc exec
// does. A command that cannot start is reported on StatusFD, as for the
// container's own start.
const ExecArg0 = "batchlet-container-exec"

// nsJoined are the namespaces exec joins, in order: the mount namespace
// (the container's root, /proc and hidden paths), its hostname, and its PID
// namespace (for the children started after).
var nsJoined = []struct {
	name string
	flag int
}{{"mnt", unix.CLONE_NEWNS}, {"uts", unix.CLONE_NEWUTS}, {"pid", unix.CLONE_NEWPID}}

// runExec is exec mode's main; it returns the command's exit status, or an
// error when the command could not start.
func runExec(arg string, status *os.File) (int, error) {
	unix.CloseOnExec(StatusFD)
	var spec Spec
	if err := json.Unmarshal([]byte(arg), &spec); err != nil {
		return 0, fmt.Errorf("container exec: %w", err)
	}
	if spec.Pid <= 0 {
		return 0, fmt.Errorf("container exec: no container process")
	}
	// The namespaces and the cgroup are opened by host paths, before
	// joining the container's mount namespace hides them.
	nsFDs, err := openNamespaces(spec.Pid)
	if err != nil {
		return 0, err
	}
	// No parent-death signal: Go's child kills itself when its parent
	// PID is not the starter's, and in the container's PID namespace the
	// parent has none (0). SIGTERM to the init kills the command instead.
	attr := &syscall.SysProcAttr{}
	if spec.CgroupDir != "" {
		if cg, err := unix.Open(spec.CgroupDir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			attr.UseCgroupFD, attr.CgroupFD = true, cg
		}
	}
	// The namespaces are this thread's (setns changes the calling thread
	// only) and the command is forked from it; the thread stays locked
	// so that the runtime starts no thread from it, which the new PID
	// namespace would refuse.
	goruntime.LockOSThread()
	if err := joinNamespaces(nsFDs); err != nil {
		return 0, err
	}
	keep, err := capSet(spec)
	if err != nil {
		return 0, err
	}
	ids, err := resolveUser(spec)
	if err != nil {
		return 0, err
	}
	env := os.Environ()
	if lookupEnv(env, "HOME") == "" && ids.home != "" {
		env = append(env, "HOME="+ids.home)
	}
	if len(spec.Argv) == 0 {
		return 0, fmt.Errorf("no command specified")
	}
	path, err := lookPath(spec.Argv[0], lookupEnv(env, "PATH"), spec.WorkDir)
	if err != nil {
		return 0, fmt.Errorf("exec: %q: %w", spec.Argv[0], err)
	}
	// The bounding, inheritable and ambient sets and no_new_privs are
	// the thread's and pass to the command; its ids change in the child.
	if err := limitCaps(keep); err != nil {
		return 0, err
	}
	if spec.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return 0, fmt.Errorf("set no_new_privs: %w", err)
		}
	}
	attr.Credential = &syscall.Credential{Uid: uint32(ids.uid), Gid: uint32(ids.gid), Groups: uint32s(ids.groups)}
	if spec.TTY {
		// The command leads a session whose controlling terminal is its
		// stdin (the runtime's pseudo-terminal), which it owns, as runc
		// gives a container's user its console.
		attr.Setsid, attr.Setctty, attr.Ctty = true, true, 0
		if err := unix.Fchown(0, int(ids.uid), -1); err != nil {
			return 0, fmt.Errorf("give the terminal to the user: %w", err)
		}
	}
	proc, err := os.StartProcess(path, spec.Argv, &os.ProcAttr{Dir: spec.WorkDir, Env: env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}, Sys: attr})
	if err != nil {
		return 0, fmt.Errorf("exec: %q: %w", spec.Argv[0], startCause(err))
	}
	status.Close() // started: EOF tells the runtime
	killOnTerm(proc)
	st, err := proc.Wait()
	if err != nil {
		return 0, fmt.Errorf("wait: %w", err)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return st.ExitCode(), nil
}

// killOnTerm kills the command once the init gets SIGTERM (the runtime's
// stop when the exec's caller went away).
func killOnTerm(proc *os.Process) {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		<-term
		_ = proc.Kill()
	}()
}

// openNamespaces opens the namespaces of process pid that exec joins.
func openNamespaces(pid int) ([]int, error) {
	fds := make([]int, 0, len(nsJoined))
	for _, ns := range nsJoined {
		fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/"+ns.name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("open the container's %s namespace: %w", ns.name, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

// joinNamespaces moves the calling thread into the namespaces of fds (see
// nsJoined). A thread shares its root and working directory with the
// process's other threads, which the kernel refuses for setns into a
// mount namespace: it takes a copy of its own first.
func joinNamespaces(fds []int) error {
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare the file system attributes: %w", err)
	}
	for i, ns := range nsJoined {
		if err := unix.Setns(fds[i], ns.flag); err != nil {
			return fmt.Errorf("join the container's %s namespace: %w", ns.name, err)
		}
		unix.Close(fds[i])
	}
	return nil
}

// startCause is the error of a failed start without os.StartProcess's
// wrapping (which names the path, already given).
func startCause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func uint32s(in []int64) []uint32 {
	out := make([]uint32, len(in))
	for i, v := range in {
		out[i] = uint32(v)
	}
	return out
}
