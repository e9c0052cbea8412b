package process

import (
	"bufio"
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

// sandbox holds a pod's mount, UTS and PID namespaces: PID 1 of the pod's
// PID namespace sleeps while the containers join through nsenter.
type sandbox struct {
	cmd *exec.Cmd
	pid int // host PID of the pod's PID 1
}

// hostTmp is where the host's /tmp stays visible inside a pod's mount
// namespace once /tmp is private.
const hostTmp = "/run/batchlet/hosttmp"

const sandboxScript = `set -e
hostname "$1"
mount --bind "$3" /etc/hosts
mount --bind /tmp ` + hostTmp + `
mount --bind "$2" /tmp
echo ready
exec sleep infinity
`

// startSandbox creates the namespaces with hostname, a private /tmp and the
// pod's /etc/hosts.
func startSandbox(hostname, tmpDir, hostsPath string) (*sandbox, error) {
	if err := os.MkdirAll(hostTmp, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", hostTmp, err)
	}
	cmd := exec.Command(unshareBin, "--mount", "--uts", "--pid", "--fork", "--kill-child", "--mount-proc",
		"--propagation", "private", "/bin/sh", "-c", sandboxScript, "sandbox", hostname, tmpDir, hostsPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox pipe: %w", err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("sandbox set-up failed: %s", strings.TrimSpace(stderr.String()))
	}
	pid, err := childPID(cmd.Process.Pid, time.Second)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("sandbox pid: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return &sandbox{cmd: cmd, pid: pid}, nil
}

func (s *sandbox) stop() {
	if s == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
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

// containerScript makes the container's own mounts, changes to its working
// directory and becomes a session leader running the command ("$@").
func containerScript(mounts []mount, workDir string) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, m := range mounts {
		src, dst := shQuote(inPod(m.source)), shQuote(m.target)
		fmt.Fprintf(&b, "if [ -d %s ]; then mkdir -p %s; else mkdir -p \"$(dirname %s)\"; [ -e %s ] || : > %s; fi\n", src, dst, dst, dst, dst)
		fmt.Fprintf(&b, "mount --bind %s %s\n", src, dst)
		if m.readOnly {
			fmt.Fprintf(&b, "mount -o remount,bind,ro %s\n", dst)
		}
	}
	fmt.Fprintf(&b, "cd %s\n", shQuote(workDir))
	fmt.Fprintf(&b, "exec %s \"$@\"\n", setsidBin)
	return b.String()
}

// nsCommand wraps argv so it runs in the sandbox's namespaces with its own
// mount namespace on top.
func nsCommand(sandboxPID int, mounts []mount, workDir string, argv []string) []string {
	out := []string{nsenterBin, "-t", strconv.Itoa(sandboxPID), "-m", "-u", "-p", "--",
		unshareBin, "-m", "--propagation", "private", "/bin/sh", "-c", containerScript(mounts, workDir), "container"}
	return append(out, argv...)
}
