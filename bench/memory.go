package bench

import (
	"bytes"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
)

// memSampleInterval is how often memPeaks reads /proc/self/status. The
// kernel keeps the peak of the whole resident set (VmHWM) but not of its
// anonymous and file parts, so those peaks are sampled; the Go runtime
// returns freed pages to the OS over seconds, so a few milliseconds
// between reads lose little of a peak. One read costs ~10-20 µs.
const memSampleInterval = 10 * time.Millisecond

// procStatus is the memory part of /proc/self/status, in kB.
type procStatus struct {
	// HWM is the peak resident set (VmHWM), RSS the current one (VmRSS).
	HWM, RSS int64
	// Anon is the anonymous part of RSS (the Go heap, stacks, runtime
	// structures); File the file-backed part (the store's mmap and the
	// executable's pages).
	Anon, File int64
}

// parseProcStatus reads the VmHWM, VmRSS, RssAnon and RssFile lines of a
// /proc/<pid>/status text; missing or malformed lines leave their field 0.
func parseProcStatus(b []byte) procStatus {
	var st procStatus
	fields := map[string]*int64{"VmHWM:": &st.HWM, "VmRSS:": &st.RSS, "RssAnon:": &st.Anon, "RssFile:": &st.File}
	for line := range bytes.Lines(b) {
		key, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		dst, known := fields[string(key)+":"]
		if !known {
			continue
		}
		// "   123 kB\n": the kernel prints these in kB.
		num, _, _ := bytes.Cut(bytes.TrimSpace(rest), []byte(" "))
		if n, err := strconv.ParseInt(string(num), 10, 64); err == nil {
			*dst = n
		}
	}
	return st
}

// readProcStatus reads this process's memory figures (zeros off Linux).
func readProcStatus() procStatus {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return procStatus{}
	}
	return parseProcStatus(b)
}

// memPeaks are the peaks and the end figures of one measured part, in kB.
type memPeaks struct {
	// HWM is the kernel's peak of the whole resident set; Anon and File
	// the sampled peaks of its parts (their sum can exceed HWM: they need
	// not peak together).
	HWM, Anon, File int64
	// End is the last reading.
	End procStatus
}

// observe folds one reading into the peaks.
func (p *memPeaks) observe(st procStatus) {
	p.HWM = max(p.HWM, st.HWM)
	p.Anon = max(p.Anon, st.Anon)
	p.File = max(p.File, st.File)
	p.End = st
}

// memSampler samples /proc/self/status in the background.
type memSampler struct {
	mu    sync.Mutex
	peaks memPeaks
	stop  func()
}

// startMemSampler returns freed memory to the OS, resets the kernel's
// peak (VmHWM) and samples the resident set's parts until stop.
func startMemSampler(r *runner) *memSampler {
	resetPeakRSS()
	m := &memSampler{}
	m.sample()
	m.stop = sync.OnceFunc(r.every(memSampleInterval, m.sample))
	return m
}

func (m *memSampler) sample() {
	st := readProcStatus()
	m.mu.Lock()
	m.peaks.observe(st)
	m.mu.Unlock()
}

// finish stops sampling and returns the peaks, including a last reading;
// it may be called again (a deferred call on error paths).
func (m *memSampler) finish() memPeaks {
	m.stop()
	m.sample()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peaks
}

// Metric names of the memory figures; the acceptance targets read them.
const (
	metricPeakRSS  = "peak RSS"
	metricPeakAnon = "peak RSS: anon (heap)"
	metricPeakFile = "peak RSS: file (store mmap, executable)"
)

// addMemory adds the peaks and the end figures of the resident set; with
// storePath, also the store mmap's share of the file part at the end
// (the rest is mostly the executable's pages, ~60 MB).
func addMemory(res *Result, p memPeaks, storePath string) {
	res.add(metricPeakRSS, mb(p.HWM), "MB")
	res.add(metricPeakAnon, mb(p.Anon), "MB")
	res.add(metricPeakFile, mb(p.File), "MB")
	res.add("RSS at end", mb(p.End.RSS), "MB")
	res.add("RSS at end: anon (heap)", mb(p.End.Anon), "MB")
	res.add("RSS at end: file (store mmap, executable)", mb(p.End.File), "MB")
	if storePath == "" {
		return
	}
	if b, err := os.ReadFile("/proc/self/smaps"); err == nil {
		res.add("RSS at end: store mmap", mb(mappedRSS(b, storePath)), "MB")
	}
}

// mappedRSS sums the Rss of the mappings of path in a /proc/<pid>/smaps
// text, in kB.
func mappedRSS(smaps []byte, path string) int64 {
	var total int64
	inPath := false
	for line := range bytes.Lines(smaps) {
		fields := bytes.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if !bytes.HasSuffix(fields[0], []byte(":")) {
			// A mapping's header: address perms offset dev inode [path].
			inPath = len(fields) >= 6 && string(bytes.Join(fields[5:], []byte(" "))) == path
			continue
		}
		if inPath && string(fields[0]) == "Rss:" && len(fields) >= 2 {
			if n, err := strconv.ParseInt(string(fields[1]), 10, 64); err == nil {
				total += n
			}
		}
	}
	return total
}

func mb(kb int64) float64 { return float64(kb) / 1024 }

// resetPeakRSS returns freed memory to the OS and resets VmHWM so the next
// reading is the peak of what follows (Linux >= 4.0; best effort).
func resetPeakRSS() {
	goruntime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}
