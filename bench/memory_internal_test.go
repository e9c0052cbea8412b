package bench

import (
	"strings"
	"testing"
)

const statusText = `Name:	batchlet
Umask:	0022
State:	S (sleeping)
VmPeak:	 2400000 kB
VmHWM:	  950000 kB
VmRSS:	  800000 kB
RssAnon:	  600000 kB
RssFile:	  200000 kB
RssShmem:	       0 kB
VmSwap:	       0 kB
Threads:	42
`

func TestParseProcStatus(t *testing.T) {
	cases := []struct {
		name string
		text string
		want procStatus
	}{
		{"linux status", statusText, procStatus{HWM: 950000, RSS: 800000, Anon: 600000, File: 200000}},
		{"no trailing newline", "RssAnon:\t 12 kB", procStatus{Anon: 12}},
		{"prefix of another key is not it", "RssAnonX:\t 5 kB\nVmHWMish: 7 kB\n", procStatus{}},
		{"malformed number left 0", "VmRSS:\t lots kB\nRssFile:\t 3 kB\n", procStatus{File: 3}},
		{"key without value", "VmHWM:\nRssAnon:\t1 kB\n", procStatus{Anon: 1}},
		{"empty", "", procStatus{}},
	}
	for _, c := range cases {
		if got := parseProcStatus([]byte(c.text)); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestMemPeaksObserve: each part keeps its own maximum, which need not
// come from the same reading, and End is the last reading.
func TestMemPeaksObserve(t *testing.T) {
	var p memPeaks
	readings := []procStatus{
		{HWM: 100, RSS: 100, Anon: 60, File: 40},
		{HWM: 300, RSS: 300, Anon: 250, File: 50},
		{HWM: 300, RSS: 200, Anon: 90, File: 110},
	}
	for _, st := range readings {
		p.observe(st)
	}
	want := memPeaks{HWM: 300, Anon: 250, File: 110, End: readings[2]}
	if p != want {
		t.Errorf("got %+v, want %+v", p, want)
	}
}

func TestAddMemory(t *testing.T) {
	var res Result
	addMemory(&res, memPeaks{HWM: 2048, Anon: 1024, File: 512, End: procStatus{RSS: 1536, Anon: 1024, File: 512}}, "")
	want := map[string]float64{
		"peak RSS": 2, "peak RSS: anon (heap)": 1, "peak RSS: file (store mmap, executable)": 0.5,
		"RSS at end": 1.5, "RSS at end: anon (heap)": 1, "RSS at end: file (store mmap, executable)": 0.5,
	}
	for name, v := range want {
		if got, ok := res.Metric(name); !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v MB", name, got, ok, v)
		}
	}
}

// TestJudgeSim: the memory goal is judged on the anonymous peak, whatever
// the store's mmap adds to the total.
func TestJudgeSim(t *testing.T) {
	cases := []struct {
		name            string
		pps, peak, anon float64
		met             bool
		note            string
	}{
		{"both met, mmap apart", 6000, 900, 150, true, "pods/s 6000: met; peak RSS: anon (heap) 150 MB: met"},
		{"slow", 1200, 300, 150, false, "pods/s 1200: NOT MET; peak RSS: anon (heap) 150 MB: met"},
		{"anon too big", 6000, 300, 250, false, "pods/s 6000: met; peak RSS: anon (heap) 250 MB: NOT MET"},
	}
	for _, c := range cases {
		res := Result{Metrics: []Metric{{Name: "pods/s", Value: c.pps}, {Name: metricPeakRSS, Value: c.peak}, {Name: metricPeakAnon, Value: c.anon}}}
		judgeSim(&res)
		if res.Met != c.met {
			t.Errorf("%s: met = %v, want %v", c.name, res.Met, c.met)
		}
		if len(res.Notes) != 1 || res.Notes[0] != c.note {
			t.Errorf("%s: notes %q, want %q", c.name, res.Notes, c.note)
		}
		if !strings.Contains(res.Target, "peak RSS: anon (heap) < 200 MB") || !strings.Contains(res.Target, "counted separately") {
			t.Errorf("%s: target %q does not say the anonymous peak is judged", c.name, res.Target)
		}
	}
}

// TestJudgeScale: the 1M goal is judged on the whole resident set.
func TestJudgeScale(t *testing.T) {
	cases := []struct {
		name       string
		wall, peak float64
		met        bool
	}{
		{"met", 240, 900, true},
		{"too slow", 400, 900, false},
		{"total too big though anon small", 240, 1100, false},
	}
	for _, c := range cases {
		res := Result{Metrics: []Metric{{Name: "wall", Value: c.wall}, {Name: metricPeakRSS, Value: c.peak}, {Name: metricPeakAnon, Value: 100}}}
		judgeScale(&res)
		if res.Met != c.met {
			t.Errorf("%s: met = %v, want %v (notes %q)", c.name, res.Met, c.met, res.Notes)
		}
		if !strings.Contains(res.Target, "peak RSS < 1024 MB (total") {
			t.Errorf("%s: target %q does not say the total is judged", c.name, res.Target)
		}
	}
}

func TestGrowthRowCPUPerPod(t *testing.T) {
	cases := []struct {
		row  growthRow
		want float64
	}{
		{growthRow{pods: 1000, cpu: 1_500_000_000}, 1.5},
		{growthRow{pods: 0, cpu: 1_000_000_000}, 0},
	}
	for _, c := range cases {
		if got := c.row.cpuPerPod(); got != c.want {
			t.Errorf("%+v: cpuPerPod = %v, want %v", c.row, got, c.want)
		}
	}
}

func TestPodGCNote(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "pod GC: --terminated-pod-gc-policy threshold, --terminated-pod-gc-threshold 12500 (upstream's)"},
		{Config{TerminatedPodGCPolicy: "counted", TerminatedPodGCThreshold: 500}, "pod GC: --terminated-pod-gc-policy counted, --terminated-pod-gc-threshold 500"},
	}
	for _, c := range cases {
		if got := podGCNote(c.cfg); got != c.want {
			t.Errorf("%+v: got %q, want %q", c.cfg, got, c.want)
		}
	}
}

const smapsText = `55b91fe79000-55b91fe7b000 r--p 00000000 fe:00 247278                     /usr/bin/batchlet
Size:                  8 kB
Rss:                   8 kB
Pss:                   8 kB
7f0000000000-7f0000100000 r--s 00000000 fe:00 1234                       /data/state.db
Size:               1024 kB
Rss:                 300 kB
Pss:                 300 kB
7f0000200000-7f0000300000 rw-p 00000000 00:00 0 
Rss:                 999 kB
7f0000400000-7f0000500000 r--s 00000000 fe:00 1234                       /data/state.db
Rss:                  20 kB
7f0000600000-7f0000700000 r--s 00000000 fe:00 99                         /data/state.db.old
Rss:                  50 kB
7f0000800000-7f0000900000 r--s 00000000 fe:00 1234                       /data/my store.db
Rss:                   7 kB
`

func TestMappedRSS(t *testing.T) {
	cases := []struct {
		path string
		want int64
	}{
		{"/data/state.db", 320}, // two mappings (bolt remaps as the file grows)
		{"/usr/bin/batchlet", 8},
		{"/data/my store.db", 7}, // a path with a space
		{"/data/none.db", 0},
	}
	for _, c := range cases {
		if got := mappedRSS([]byte(smapsText), c.path); got != c.want {
			t.Errorf("%s: got %d kB, want %d", c.path, got, c.want)
		}
	}
}
