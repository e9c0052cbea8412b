package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/batchlet/batchlet/bench"
	"github.com/batchlet/batchlet/cli"
)

// execEnv makes this test binary act as the batchlet binary, so the cold
// scenario can execute it as `batchlet run`.
const execEnv = "BATCHLET_BENCH_TEST_EXEC"

func TestMain(m *testing.M) {
	if os.Getenv(execEnv) == "1" {
		os.Exit(cli.Main(os.Args[1:]))
	}
	klog.SetSlogLogger(slog.New(slog.DiscardHandler)) // keep test output to results
	os.Exit(m.Run())
}

func tinyConfig(t testing.TB) bench.Config {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return bench.Config{
		Completions: 20, Parallelism: 5, APIPods: 50, Iterations: 3, WatchWrites: 10,
		Command: []string{exe}, Env: []string{execEnv + "=1"},
		DataDir: t.TempDir(), Timeout: 2 * time.Minute, ShimSupervisor: true, // as the CLI's default
	}
}

// TestTinyScenarios runs every scenario at a tiny size and checks that each
// completed with the right counts; timings are not asserted.
func TestTinyScenarios(t *testing.T) {
	names := []string{"process", "sim", "scale", "cold", "api"}
	rep, err := bench.Run(context.Background(), tinyConfig(t), names)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(rep.Results) != len(names) {
		t.Fatalf("got %d results, want %d", len(rep.Results), len(names))
	}
	for _, r := range rep.Results {
		switch r.Scenario {
		case "process", "sim", "scale":
			wantChecks(t, r, "Complete=True", "succeeded=20", `completedIndexes="0-19"`, "failed=0")
			wantMetrics(t, r, "pods/s", "wall", "peak RSS", "peak RSS: anon (heap)", "peak RSS: file (store mmap, executable)", "RSS at end: store mmap", "CPU (server, run)")
			wantAnonWithinPeak(t, r, "")
			if r.Scenario == "process" {
				// The inits and commands the supervisor reaped.
				wantMetrics(t, r, "CPU (live children: shim supervisor)")
			}
			if r.Scenario != "scale" {
				wantMetrics(t, r, "create→running p99", "exit→counted p99")
				if v, _ := r.Metric("pods timed"); v != 20 {
					t.Errorf("%s: %v pods timed from create to counted, want 20", r.Scenario, v)
				}
			}
		case "cold":
			wantChecks(t, r, "3 runs exited 0")
			wantMetrics(t, r, "wall median")
		case "api":
			wantChecks(t, r, "list returned 50 pods", "selector returned 1 pods", "protobuf list returned 50 pods", "informer saw all 10 writes")
			wantMetrics(t, r, "list all p99", "list selector p99", "list all protobuf p99", "watch delivery p99")
			wantAnonWithinPeak(t, r, "")
		}
	}
	var table, js bytes.Buffer
	if err := bench.WriteTable(&table, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "pods/s") {
		t.Errorf("table has no pods/s:\n%s", table.String())
	}
	if err := bench.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	var back bench.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Results) != len(names) {
		t.Errorf("JSON report does not round-trip (%v): %s", err, js.String())
	}
	if !strings.Contains(js.String(), `"peak RSS: anon (heap)"`) {
		t.Errorf("JSON report has no anonymous peak:\n%s", js.String())
	}
}

// wantAnonWithinPeak checks the sampled anonymous peak (metrics named
// prefix+"peak RSS: anon (heap)") is positive and within the kernel's peak
// of the whole resident set, which every sample's RSS is below.
func wantAnonWithinPeak(t *testing.T, r bench.Result, prefix string) {
	t.Helper()
	anon, _ := r.Metric(prefix + "peak RSS: anon (heap)")
	peak, _ := r.Metric(prefix + "peak RSS")
	if anon <= 0 || anon > peak {
		t.Errorf("%s: %speak RSS: anon (heap) = %v MB, want in (0, peak RSS %v MB]", r.Scenario, prefix, anon, peak)
	}
}

func wantChecks(t *testing.T, r bench.Result, checks ...string) {
	t.Helper()
	for _, c := range checks {
		found := false
		for _, got := range r.Checks {
			found = found || got == c
		}
		if !found {
			t.Errorf("%s: check %q missing from %q", r.Scenario, c, r.Checks)
		}
	}
}

func wantNote(t *testing.T, r bench.Result, note string) {
	t.Helper()
	for _, n := range r.Notes {
		if n == note {
			return
		}
	}
	t.Errorf("%s: note %q missing from %q", r.Scenario, note, r.Notes)
}

func wantMetrics(t *testing.T, r bench.Result, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, ok := r.Metric(n); !ok {
			t.Errorf("%s: metric %q missing", r.Scenario, n)
		}
	}
}

func TestSelect(t *testing.T) {
	got, err := bench.Select(nil, false)
	if err != nil || strings.Join(got, ",") != "process,sim,cold,api" {
		t.Errorf("Select(nil, false) = %v, %v", got, err)
	}
	got, err = bench.Select([]string{"sim"}, true)
	if err != nil || strings.Join(got, ",") != "sim,scale" {
		t.Errorf("Select([sim], true) = %v, %v", got, err)
	}
	if _, err := bench.Select([]string{"nope"}, false); err == nil || !strings.Contains(err.Error(), `unknown scenario "nope"`) {
		t.Errorf("Select([nope]) error = %v", err)
	}
}

func benchScenario(b *testing.B, name string, completions, parallelism int) {
	cfg := tinyConfig(b)
	cfg.Completions, cfg.Parallelism = completions, parallelism
	for b.Loop() {
		rep, err := bench.Run(context.Background(), cfg, []string{name})
		if err != nil {
			b.Fatal(err)
		}
		if v, ok := rep.Results[0].Metric("pods/s"); ok {
			b.ReportMetric(v, "pods/s")
		}
	}
}

// BenchmarkSimJob runs a 2,000-pod Indexed Job on the sim runtime.
func BenchmarkSimJob(b *testing.B) { benchScenario(b, "sim", 2000, 200) }

// BenchmarkProcessJob runs a 500-pod Indexed Job of `true` processes.
func BenchmarkProcessJob(b *testing.B) { benchScenario(b, "process", 500, 50) }

// BenchmarkListPods times the api scenario with 1,000 stored pods.
func BenchmarkListPods(b *testing.B) {
	cfg := tinyConfig(b)
	cfg.APIPods, cfg.Iterations, cfg.WatchWrites = 1000, 20, 20
	for b.Loop() {
		rep, err := bench.Run(context.Background(), cfg, []string{"api"})
		if err != nil {
			b.Fatal(err)
		}
		if v, ok := rep.Results[0].Metric("list all p99"); ok {
			b.ReportMetric(v, "list-p99-ms")
		}
	}
}

// BenchmarkColdRun times one `batchlet run` of a one-pod Job.
func BenchmarkColdRun(b *testing.B) {
	cfg := tinyConfig(b)
	cfg.Iterations = 1
	for b.Loop() {
		rep, err := bench.Run(context.Background(), cfg, []string{"cold"})
		if err != nil {
			b.Fatal(err)
		}
		if v, ok := rep.Results[0].Metric("wall median"); ok {
			b.ReportMetric(v, "ms")
		}
	}
}

// TestImageScenario: the image scenario times each mode's pods to Running
// (root and busybox-static needed, as for the image runtime).
func TestImageScenario(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the image runtime needs root")
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("needs /bin/busybox (apt-get install busybox-static)")
	}
	rep, err := bench.Run(context.Background(), tinyConfig(t), []string{"image"})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r := rep.Results[0]
	wantChecks(t, r, "3 pods per mode reached Running")
	wantMetrics(t, r, "process: create → Running, median", "image (cached): create → Running, median",
		"image (cold pull): create → Running, median", "image (cached) − process, medians")
}
