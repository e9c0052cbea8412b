package process

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	unshareBin = "/usr/bin/unshare"
	nsenterBin = "/usr/bin/nsenter"
	setsidBin  = "/usr/bin/setsid"
)

// hostTmp is where the host's /tmp stays visible inside a container's
// mount namespace once /tmp is private.
const hostTmp = "/run/batchlet/hosttmp"

// sandbox holds a pod's PID and UTS namespaces: its PID 1 sleeps while
// the containers join through nsenter. Each container gets its own mount
// namespace with the pod's /etc/hosts, a private /tmp and its volumes.
type sandbox struct {
	cmd *exec.Cmd
	pid int // host PID of the pod's PID 1
}

// startSandbox starts PID 1 of the pod in new PID and UTS namespaces.
func startSandbox() (*sandbox, error) {
	cmd := exec.Command("/bin/sleep", "infinity")
	// Pdeathsig: if the agent dies, PID 1 dies and the kernel kills every
	// process of the pod.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL,
		Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return &sandbox{cmd: cmd, pid: cmd.Process.Pid}, nil
}

func (s *sandbox) stop() {
	if s == nil {
		return
	}
	_ = syscall.Kill(s.pid, syscall.SIGKILL)
}

// childPID returns the first child of pid, waiting up to wait for it.
func childPID(pid int, wait time.Duration) (int, error) {
	deadline := time.Now().Add(wait)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if err != nil {
			return 0, err
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			return strconv.Atoi(f[0])
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("process %d has no child", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// inPod maps a host path to where it is seen inside a pod's mount
// namespace (the host's /tmp moves to hostTmp).
func inPod(path string) string {
	if path == "/tmp" {
		return hostTmp
	}
	if strings.HasPrefix(path, "/tmp/") {
		return hostTmp + path[len("/tmp"):]
	}
	return path
}

// mount is a bind mount of a container.
type mount struct {
	source, target string
	readOnly       bool
}

// shQuote quotes s for /bin/sh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// podMounts describes the mounts every container of a pod gets.
type podMounts struct {
	hostname  string
	hostsFile string
	tmpDir    string
	// readyFile (a host path), when set, is created once the mounts are
	// made, just before the command starts: exec waits for it so that it
	// never joins a half-built mount namespace.
	readyFile string
}

// containerScript sets the pod's hostname, makes the container's mounts,
// changes to its working directory and becomes a session leader running
// the command ("$@").
func containerScript(pm podMounts, mounts []mount, workDir string) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	fmt.Fprintf(&b, "echo %s > /proc/sys/kernel/hostname\n", shQuote(pm.hostname))
	fmt.Fprintf(&b, "mount --bind %s /etc/hosts\n", shQuote(pm.hostsFile))
	needHostTmp := strings.HasPrefix(pm.tmpDir, "/tmp/")
	for _, m := range mounts {
		needHostTmp = needHostTmp || inPod(m.source) != m.source
	}
	if needHostTmp {
		fmt.Fprintf(&b, "mount --bind /tmp %s\n", hostTmp)
	}
	fmt.Fprintf(&b, "mount --bind %s /tmp\n", shQuote(inPod(pm.tmpDir)))
	for _, m := range mounts {
		src, dst := shQuote(inPod(m.source)), shQuote(m.target)
		fmt.Fprintf(&b, "if [ -d %s ]; then mkdir -p %s; else mkdir -p \"$(dirname %s)\"; [ -e %s ] || : > %s; fi\n", src, dst, dst, dst, dst)
		fmt.Fprintf(&b, "mount --bind %s %s\n", src, dst)
		if m.readOnly {
			fmt.Fprintf(&b, "mount -o remount,bind,ro %s\n", dst)
		}
	}
	fmt.Fprintf(&b, "cd %s\n", shQuote(workDir))
	if pm.readyFile != "" {
		fmt.Fprintf(&b, ": > %s\n", shQuote(inPod(pm.readyFile)))
	}
	fmt.Fprintf(&b, "exec %s \"$@\"\n", setsidBin)
	return b.String()
}

// nsCommand wraps argv so it runs in the sandbox's PID and UTS namespaces
// with its own mount namespace.
func nsCommand(sandboxPID int, pm podMounts, mounts []mount, workDir string, argv []string) []string {
	out := []string{nsenterBin, "-t", strconv.Itoa(sandboxPID), "-u", "-p", "--",
		unshareBin, "-m", "--propagation", "private", "/bin/sh", "-c", containerScript(pm, mounts, workDir), "container"}
	return append(out, argv...)
}
