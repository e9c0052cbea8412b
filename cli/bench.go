package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/batchlet/batchlet/bench"
)

func newBenchCommand() *cobra.Command {
	var cfg bench.Config
	var asJSON, withScale bool
	var logLevel string
	var help strings.Builder
	for _, s := range bench.Scenarios() {
		fmt.Fprintf(&help, "  %-8s %s\n", s[0], s[1])
	}
	cmd := &cobra.Command{
		Use:   "bench [scenario...]",
		Short: "Measure throughput, latency and footprint of the embedded system",
		Long: `Bench starts the embedded control plane on a fresh temporary data dir (the
durable store) for each scenario, drives it through client-go and prints
pods/s, wall time, p50/p99 latencies (from its own watch observation times),
peak RSS and CPU seconds of this process, and the ratio to a baseline
measured in the same run.

Scenarios (default: all but scale, growth, peer and image):
` + help.String() + `
Sizes are flags, so CI can run a tiny version:
  batchlet bench --completions 20 --parallelism 5 --pods 50 --iterations 3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			names, err := bench.Select(args, withScale)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg.Progress = cmd.ErrOrStderr()
			cfg.Logger = newLogger(logLevel, cmd.ErrOrStderr())
			routeKlog(cfg.Logger)
			rep, runErr := bench.Run(ctx, cfg, names)
			if asJSON {
				err = bench.WriteJSON(cmd.OutOrStdout(), rep)
			} else {
				err = bench.WriteTable(cmd.OutOrStdout(), rep)
			}
			if runErr != nil {
				return runErr
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.BoolVar(&withScale, "scale", false, "also run the 1,000,000-completion scale scenario")
	fl.IntVar(&cfg.Completions, "completions", 0, "completions of the process/sim/scale Jobs (default per scenario: 10000, 100000, 1000000)")
	fl.IntVar(&cfg.Parallelism, "parallelism", 0, "parallelism of the process/sim/scale Jobs (default per scenario: 100, 1000, 1000)")
	fl.IntVar(&cfg.APIPods, "pods", 10_000, "pods stored by the api scenario")
	fl.IntVar(&cfg.Iterations, "iterations", 0, "runs of cold (default 10) and requests per api list measurement (default 100)")
	fl.IntVar(&cfg.WatchWrites, "watch-writes", 200, "writes timed through a watch in the api scenario")
	fl.StringVar(&cfg.DataDir, "data-dir", "", "parent of the per-scenario data dirs (default: the system temp dir)")
	fl.BoolVar(&cfg.Keep, "keep", false, "keep the per-scenario data dirs")
	fl.IntVar(&cfg.TerminatedPodGCThreshold, "terminated-pod-gc-threshold", 0, "the control plane's pod GC threshold for the job scenarios (default: upstream's 12,500; negative: no limit)")
	fl.BoolVar(&cfg.ShimSupervisor, "shim-supervisor", true, "process scenario: containers served by the shim supervisor, as batchlet server's default (false: a shim per container)")
	fl.StringVar(&cfg.TerminatedPodGCPolicy, "terminated-pod-gc-policy", "threshold", "the control plane's pod GC policy for the job scenarios: threshold (upstream's) or counted (see `batchlet server --help`)")
	fl.IntSliceVar(&cfg.GrowthCompletions, "growth-completions", nil, "completions of the growth scenario's single Jobs (default 10000,100000,1000000)")
	fl.IntSliceVar(&cfg.GrowthJobs, "growth-jobs", nil, "numbers of concurrent 10-pod Jobs in the growth scenario (default 1,100,10000)")
	fl.StringVar(&cfg.PeerBin, "peer-bin", "", "directory of etcd, kube-apiserver, kube-controller-manager and kube-scheduler for the peer scenario (default: $BATCHLET_REALCLUSTER_BIN, then hack/realcluster/build.sh --peer's cache)")
	fl.DurationVar(&cfg.Timeout, "timeout", 0, "give up on a scenario after this long (default 30m; scale 2h)")
	fl.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of each scenario's measured part (FILE, or FILE.<scenario> with several)")
	fl.StringVar(&cfg.MemProfile, "memprofile", "", "write a heap profile at the end of each scenario's measured part (named like --cpuprofile)")
	fl.IntSliceVar(&cfg.MemProfileAt, "memprofile-at", nil, "job scenarios: also write a heap profile when the Job has counted each of these numbers of succeeded pods (FILE.<N>, FILE from --memprofile), to compare sizes of one run with go tool pprof -base")
	fl.StringVar(&logLevel, "log-level", "", "show control plane logs at this level (debug, info, warn, error)")
	return cmd
}
