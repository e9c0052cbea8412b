package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchlet/batchlet/bench"
)

// TestGrowthScenario runs the growth table at tiny sizes: one row per
// single-Job size and per number of small Jobs, each with pods/s, peak RSS
// (total and anonymous) and CPU per pod; timings are not asserted.
func TestGrowthScenario(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.GrowthCompletions, cfg.GrowthJobs = []int{20}, []int{1, 3}
	cfg.TerminatedPodGCPolicy = "counted" // passed to every row's control plane
	rep, err := bench.Run(context.Background(), cfg, []string{"growth"})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r := rep.Results[0]
	wantChecks(t, r, "every Job Complete=True with every pod succeeded")
	for _, row := range []string{"1 Job x 20 completions (parallelism 20): ", "1 Jobs x 10 pods: ", "3 Jobs x 10 pods: "} {
		wantMetrics(t, r, row+"pods/s", row+"peak RSS", row+"peak RSS: anon (heap)", row+"CPU per pod")
		wantAnonWithinPeak(t, r, row)
	}
	wantNote(t, r, "pod GC: --terminated-pod-gc-policy counted, --terminated-pod-gc-threshold 12500 (upstream's)")
	if r.Params["rows"] != 3 {
		t.Errorf("rows = %d, want 3", r.Params["rows"])
	}
}

// TestPeerSkipsWithoutBinaries: without the upstream binaries the peer
// scenario reports a skip naming what is missing and how to build it.
func TestPeerSkipsWithoutBinaries(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.PeerBin = t.TempDir()
	if err := os.WriteFile(filepath.Join(cfg.PeerBin, "etcd"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rep, err := bench.Run(context.Background(), cfg, []string{"peer"})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r := rep.Results[0]
	if len(r.Metrics) != 0 || len(r.Notes) != 1 {
		t.Fatalf("peer without binaries: metrics %v, notes %q; want no metrics and one note", r.Metrics, r.Notes)
	}
	want := "skipped: kube-apiserver, kube-controller-manager, kube-scheduler missing in " + cfg.PeerBin + " (build them with hack/realcluster/build.sh --peer"
	if !strings.HasPrefix(r.Notes[0], want) {
		t.Errorf("note = %q, want prefix %q", r.Notes[0], want)
	}
}

// TestPeerScenario runs the peer scenario at a tiny size when the upstream
// binaries are there (BATCHLET_REALCLUSTER_BIN, from
// hack/realcluster/build.sh --peer): both control planes complete the Job.
func TestPeerScenario(t *testing.T) {
	bin := os.Getenv("BATCHLET_REALCLUSTER_BIN")
	if bin == "" {
		t.Skip("BATCHLET_REALCLUSTER_BIN is not set (hack/realcluster/build.sh --peer prints it)")
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Skipf("%s: %v (hack/realcluster/build.sh --peer builds it)", b, err)
		}
	}
	cfg := tinyConfig(t)
	cfg.PeerBin = bin
	rep, err := bench.Run(context.Background(), cfg, []string{"peer"})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r := rep.Results[0]
	wantChecks(t, r, "Complete=True", "succeeded=20", `completedIndexes="0-19"`,
		`upstream: Complete=True, succeeded=20, completedIndexes="0-19", failed=0`)
	wantMetrics(t, r, "batchlet server: pods/s", "upstream: pods/s", "upstream control plane: peak RSS (sum)", "CPU ratio (upstream with agent / batchlet server)")
	if r.Ratio <= 0 {
		t.Errorf("ratio = %v, want > 0", r.Ratio)
	}
}
