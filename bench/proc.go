package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Machine describes where a run happened.
type Machine struct {
	CPUs      int    `json:"cpus"`
	MemTotal  string `json:"memTotal"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	CPUModel  string `json:"cpuModel,omitempty"`
}

func (m Machine) String() string {
	s := fmt.Sprintf("%d CPUs, %s RAM, %s, %s", m.CPUs, m.MemTotal, m.GoVersion, m.OS)
	if m.CPUModel != "" {
		s += ", " + m.CPUModel
	}
	return s
}

// DescribeMachine reads the CPU count, memory and CPU model of this host.
func DescribeMachine() Machine {
	m := Machine{CPUs: goruntime.NumCPU(), GoVersion: goruntime.Version(), OS: goruntime.GOOS + "/" + goruntime.GOARCH}
	if kb, ok := procField("/proc/meminfo", "MemTotal:"); ok {
		m.MemTotal = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if out, err := exec.Command("uname", "-r").Output(); err == nil {
		m.OS += " (Linux " + strings.TrimSpace(string(out)) + ")"
	}
	return m
}

// usage is a snapshot of this process's resource use.
type usage struct {
	wall     time.Time
	cpu      time.Duration // user+sys of this process
	childCPU time.Duration // user+sys of waited-for children
	// liveChildCPU: user+sys of the children still running (the process
	// runtime's shim supervisor), with that of the children they reaped.
	liveChildCPU time.Duration
}

func takeUsage() usage {
	u := usage{wall: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.cpu = tv(ru.Utime) + tv(ru.Stime)
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		u.childCPU = tv(ru.Utime) + tv(ru.Stime)
	}
	u.liveChildCPU = liveChildrenCPU()
	return u
}

// clockTicks is USER_HZ, the unit of the times in /proc/<pid>/stat.
const clockTicks = 100

// liveChildrenCPU is the CPU of this process's running children and of
// the children they reaped (/proc/<pid>/stat utime, stime, cutime,
// cstime).
func liveChildrenCPU() time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := strconv.Itoa(os.Getpid())
	var total time.Duration
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 > len(s) {
			continue
		}
		f := strings.Fields(s[i+2:])
		if len(f) < 15 || f[1] != self {
			continue
		}
		for _, v := range f[11:15] {
			n, _ := strconv.ParseInt(v, 10, 64)
			total += time.Duration(n) * time.Second / clockTicks
		}
	}
	return total
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

// procField reads a "Key:   123 kB" line of a /proc file, in kB.
func procField(path, key string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, key) {
			continue
		}
		fields := strings.Fields(line[len(key):])
		if len(fields) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		return n, err == nil
	}
	return 0, false
}
