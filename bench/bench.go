package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batchlet/batchlet/controlplane"
)

// Config sizes the scenarios. Zero values take each scenario's default
// (the sizes the targets are stated for).
type Config struct {
	// Completions and Parallelism of the Job in the process, sim and scale
	// scenarios; 0 keeps each scenario's default.
	Completions int
	Parallelism int
	// APIPods is how many pods the api scenario stores (default 10,000).
	APIPods int
	// Iterations of each measured request in api and of runs in cold
	// (default 200 for api lists, 10 for cold).
	Iterations int
	// WatchWrites is how many writes the api scenario times through a
	// watch (default 200).
	WatchWrites int
	// Command is the batchlet command line prefix cold executes
	// (default: this executable); Env is added to its environment.
	Command []string
	Env     []string
	// DataDir is where each scenario's temporary data dir is created
	// (default: the system temp dir). Keep leaves them behind.
	DataDir string
	Keep    bool
	// Timeout bounds each scenario (default: the scenario's own, 30
	// minutes, or 2 hours for scale, which takes 15-25 minutes on a
	// 2-core machine).
	Timeout time.Duration
	// CPUProfile, when set, receives a CPU profile of each scenario's
	// measured part: the path itself for a single scenario, else
	// <path-without-ext>.<scenario><ext>.
	CPUProfile string
	// MemProfile, when set, receives a heap profile taken when each
	// scenario's measured part ends (named like CPUProfile's).
	MemProfile string
	// MemProfileAt are the numbers of succeeded pods at which the job
	// scenarios also write a heap profile (<MemProfile's path>.<N>), to
	// compare what the control plane holds at two sizes of one run.
	MemProfileAt []int
	// TerminatedPodGCThreshold is the control plane's pod GC threshold
	// (controlplane.Options; 0: upstream's 12,500).
	TerminatedPodGCThreshold int
	// ShimSupervisor runs the process scenario's containers under the
	// process runtime's shim supervisor (controlplane.Options).
	ShimSupervisor bool
	// TerminatedPodGCPolicy is the control plane's pod GC policy
	// (controlplane.Options; empty: threshold, upstream's).
	TerminatedPodGCPolicy string
	// GrowthCompletions are the single-Job sizes of the growth scenario
	// and GrowthJobs its numbers of concurrent 10-pod Jobs (both empty:
	// 10,000, 100,000 and 1,000,000 completions; 1, 100 and 10,000 Jobs).
	GrowthCompletions []int
	GrowthJobs        []int
	// PeerBin is the directory of the upstream binaries the peer scenario
	// runs (etcd, kube-apiserver, kube-controller-manager, kube-scheduler;
	// default: $BATCHLET_REALCLUSTER_BIN, then hack/realcluster/build.sh's
	// cache).
	PeerBin string
	// Logger receives the control plane's logs (default: discarded).
	Logger *slog.Logger
	// Progress receives one line per phase (default: discarded).
	Progress io.Writer
}

func (c *Config) defaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.WatchWrites == 0 {
		c.WatchWrites = 200
	}
	if c.APIPods == 0 {
		c.APIPods = 10_000
	}
}

// scenario is one named measurement.
type scenario struct {
	name string
	// byDefault is false for scenarios that run only when named.
	byDefault bool
	help      string
	run       func(ctx context.Context, r *runner) (Result, error)
	// timeout, when set, replaces defaultTimeout for this scenario.
	timeout time.Duration
}

// defaultTimeout bounds a scenario unless Config.Timeout is set.
const defaultTimeout = 30 * time.Minute

func (s scenario) timeoutFor(cfg Config) time.Duration {
	switch {
	case cfg.Timeout > 0:
		return cfg.Timeout
	case s.timeout > 0:
		return s.timeout
	}
	return defaultTimeout
}

var scenarios = []scenario{
	{name: "process", byDefault: true, help: "Indexed Job of `true` pods on the process runtime (10,000 x 100) vs xargs -P", run: runProcess},
	{name: "sim", byDefault: true, help: "the same Job on the simulated runtime (100,000 x 1,000): the control plane's ceiling", run: runSim},
	{name: "scale", help: "1,000,000-completion Indexed Job on sim: completes, completedIndexes, in < 5 minutes with peak RSS < 1 GB", run: runScale, timeout: 2 * time.Hour},
	{name: "cold", byDefault: true, help: "`batchlet run` of a one-pod `true` Job as a whole process, median of 10", run: runCold},
	{name: "image", help: "pod create → container Running: process runtime vs a cached image vs a cold pull from a loopback registry, median of 10 each", run: runImage},
	{name: "growth", help: "how cost grows: pods/s, peak RSS (total and anonymous) and CPU per pod of one sim Job at 10,000, 100,000 and 1,000,000 completions and of 1, 100, 10,000 concurrent 10-pod Jobs", run: runGrowth, timeout: 2 * time.Hour},
	{name: "peer", help: "the same Indexed Job (sim agent) on an upstream control plane built from modules (hack/realcluster/build.sh --peer) and on batchlet server: pods/s of each and the ratio", run: runPeer},
	{name: "api", byDefault: true, help: "list/watch latency with 10,000 pods stored (no agent)", run: runAPI},
}

// Scenarios lists the scenario names with a line of help each.
func Scenarios() [][2]string {
	var out [][2]string
	for _, s := range scenarios {
		help := s.help
		switch {
		case s.name == "scale":
			help += " (only when named or with --scale)"
		case !s.byDefault:
			help += " (only when named)"
		}
		out = append(out, [2]string{s.name, help})
	}
	return out
}

// Select returns the scenarios to run: the named ones in the order given,
// or every default one (plus scale when withScale).
func Select(names []string, withScale bool) ([]string, error) {
	if len(names) == 0 {
		for _, s := range scenarios {
			if s.byDefault || (withScale && s.name == "scale") {
				names = append(names, s.name)
			}
		}
		return names, nil
	}
	for _, n := range names {
		if !slices.ContainsFunc(scenarios, func(s scenario) bool { return s.name == n }) {
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", n, strings.Join(scenarioNames(), ", "))
		}
	}
	if withScale && !slices.Contains(names, "scale") {
		names = append(names, "scale")
	}
	return names, nil
}

func scenarioNames() []string {
	var out []string
	for _, s := range scenarios {
		out = append(out, s.name)
	}
	return out
}

// Run runs the named scenarios one after another and returns their
// results. A scenario that fails stops the run with its error; the results
// so far are returned with it.
func Run(ctx context.Context, cfg Config, names []string) (*Report, error) {
	cfg.defaults()
	r := &runner{cfg: cfg, single: len(names) == 1, baselines: map[[2]int]float64{}}
	rep := &Report{Machine: DescribeMachine()}
	for _, n := range names {
		i := slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == n })
		if i < 0 {
			return rep, fmt.Errorf("unknown scenario %q", n)
		}
		r.progress("== %s", n)
		sctx, cancel := context.WithTimeout(ctx, scenarios[i].timeoutFor(cfg))
		res, err := scenarios[i].run(sctx, r)
		cancel()
		if err != nil {
			return rep, fmt.Errorf("scenario %s: %w", n, err)
		}
		res.Scenario = n
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// runner carries what scenarios share within one run.
type runner struct {
	cfg    Config
	single bool
	// baselines caches xargs rates by (n, parallelism).
	baselines map[[2]int]float64
}

func (r *runner) progress(format string, args ...any) {
	fmt.Fprintf(r.cfg.Progress, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// every runs fn each interval until the returned stop is called.
func (r *runner) every(interval time.Duration, fn func()) (stop func()) {
	t := time.NewTicker(interval)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-t.C:
				fn()
			case <-done:
				return
			}
		}
	})
	return func() {
		t.Stop()
		close(done)
		wg.Wait()
	}
}

// tempDir creates a scenario's data dir; the returned func removes it
// unless Keep.
func (r *runner) tempDir(name string) (string, func(), error) {
	if r.cfg.DataDir != "" {
		if err := os.MkdirAll(r.cfg.DataDir, 0o755); err != nil {
			return "", nil, fmt.Errorf("create %s: %w", r.cfg.DataDir, err)
		}
	}
	dir, err := os.MkdirTemp(r.cfg.DataDir, "batchlet-bench-"+name+"-")
	if err != nil {
		return "", nil, fmt.Errorf("create data dir: %w", err)
	}
	return dir, func() {
		if r.cfg.Keep {
			r.progress("kept data dir %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
		controlplane.RemovePodsMemory(dir)
	}, nil
}

// profile starts a CPU profile for the scenario when asked; the returned
// func stops it and notes the file in res.
func (r *runner) profile(name string, res *Result) (func(), error) {
	if r.cfg.CPUProfile == "" {
		return func() {}, nil
	}
	path := r.profilePath(r.cfg.CPUProfile, name)
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("start cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		res.Notes = append(res.Notes, "cpu profile: "+path)
	}, nil
}

func (r *runner) profilePath(path, scenario string) string {
	if r.single {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + scenario + ext
}

// heapProfilesAt writes a heap profile, named <path>.<N>, as soon as
// succeeded() reaches each of MemProfileAt's N; the returned func stops
// watching. The profile is taken after a GC, so it shows what is live.
func (r *runner) heapProfilesAt(name string, succeeded func() int, res *Result) (stop func()) {
	if r.cfg.MemProfile == "" || len(r.cfg.MemProfileAt) == 0 {
		return func() {}
	}
	marks := slices.Sorted(slices.Values(r.cfg.MemProfileAt))
	var mu sync.Mutex
	var notes []string
	stopTicker := r.every(100*time.Millisecond, func() {
		for len(marks) > 0 && succeeded() >= marks[0] {
			path := fmt.Sprintf("%s.%d", r.profilePath(r.cfg.MemProfile, name), marks[0])
			marks = marks[1:]
			runtime.GC()
			note := "heap profile: " + path
			if err := writeHeapProfile(path); err != nil {
				note = fmt.Sprintf("heap profile %s: %v", path, err)
			}
			r.progress("%s: %s", name, note)
			mu.Lock()
			notes = append(notes, note)
			mu.Unlock()
		}
	})
	return func() {
		stopTicker()
		mu.Lock()
		defer mu.Unlock()
		res.Notes = append(res.Notes, notes...)
	}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// heapProfile writes a heap profile for the scenario when asked, while
// its control plane still holds everything it built up.
func (r *runner) heapProfile(name string, res *Result) {
	if r.cfg.MemProfile == "" {
		return
	}
	path := r.profilePath(r.cfg.MemProfile, name)
	f, err := os.Create(path)
	if err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("heap profile: %v", err))
		return
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("heap profile: %v", err))
		return
	}
	res.Notes = append(res.Notes, "heap profile: "+path)
}
