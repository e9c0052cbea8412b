package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	jobcontroller "github.com/batchlet/batchlet/controller/job"
	"github.com/batchlet/batchlet/controller/podgc"
	"github.com/batchlet/batchlet/controlplane"
	"github.com/batchlet/batchlet/install"
)

func newControllersCommand() *cobra.Command {
	var (
		kubeconfig  string
		names       []string
		metricsAddr string
		logLevel    string
		leader      = leaderElection{namespace: defaultLeaderNamespace(), name: install.LeaseName}
		webhookAddr string
		certDir     string
		ctlOpts     controlplane.ControllerOptions
		jobMode     string
	)
	cmd := &cobra.Command{
		Use:   "controllers",
		Short: "Run only the controllers against any Kubernetes API (batchlet's or a real cluster's)",
		Long: `Controllers runs batchlet's controllers against the API server of a
kubeconfig: a batchlet server, or a real kube-apiserver. They use client-go
only, so they behave the same against both.

On a real cluster, run only what the cluster lacks: kube-controller-manager
already runs a Job controller, TTL controller, garbage collector, pod GC and
node lifecycle, and kube-scheduler schedules; two controllers for one
resource fight. The JobSet controller needs the jobset.x-k8s.io CRD installed:

  batchlet controllers --kubeconfig ~/.kube/config --controllers jobset

The Job controller replaces kube-controller-manager's by default (Jobs
without spec.managedBy, or with kubernetes.io/job-controller or
batchlet.dev/job-controller). With --job-controller-mode=alongside it runs
beside it and manages only Jobs with spec.managedBy:
batchlet.dev/job-controller, which kube-controller-manager leaves alone:

  batchlet controllers --controllers job --job-controller-mode alongside`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := newLogger(logLevel, cmd.ErrOrStderr())
			routeKlog(logger)
			mode, err := jobcontroller.ParseMode(jobMode)
			if err != nil {
				return err
			}
			ctlOpts.JobMode = mode
			ctlOpts.TerminatedPodGCThreshold = podGCThreshold(ctlOpts.TerminatedPodGCThreshold)
			if err := podgc.ValidPolicy(ctlOpts.TerminatedPodGCPolicy); err != nil {
				return err
			}
			if err := validateJobBackoffFlags(ctlOpts.JobPodFailureBackOff, ctlOpts.JobMaxPodFailureBackOff); err != nil {
				return err
			}
			cfg, err := loadKubeconfig(kubeconfig)
			if err != nil {
				return err
			}
			cfg.QPS, cfg.Burst = 200, 400
			if webhookAddr != "" {
				if err := serveWebhook(ctx, webhookAddr, certDir, logger); err != nil {
					return err
				}
			}
			if !leader.enabled {
				return runControllers(ctx, cfg, names, ctlOpts, metricsAddr, logger)
			}
			return runLeaderElected(ctx, cfg, leader, logger, func(ctx context.Context) error {
				return runControllers(ctx, cfg, names, ctlOpts, metricsAddr, logger)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server (default: KUBECONFIG or ~/.kube/config)")
	fl.StringSliceVar(&names, "controllers", controlplane.DefaultControllers(), "controllers to run, of: "+strings.Join(controlplane.ControllerNames(), ", "))
	fl.StringVar(&metricsAddr, "metrics-bind-address", "", "serve Prometheus /metrics here (e.g. 127.0.0.1:8080); off when empty")
	fl.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.BoolVar(&leader.enabled, "leader-elect", false, "run the controllers only while holding a Lease, so several replicas can run (one active)")
	fl.StringVar(&leader.namespace, "leader-elect-namespace", leader.namespace, "namespace of the leader-election Lease (default: POD_NAMESPACE, else "+install.DefaultNamespace+")")
	fl.StringVar(&leader.name, "leader-elect-lease-name", leader.name, "name of the leader-election Lease")
	fl.StringVar(&webhookAddr, "webhook-bind-address", "", "serve the JobSet admission webhook (HTTPS) here, e.g. :9443; off when empty (see `batchlet install --webhook-url`)")
	fl.StringVar(&certDir, "webhook-cert-dir", "", "directory with the webhook's tls.crt and tls.key")
	addRetentionFlags(fl, &ctlOpts.ResultRetention)
	fl.StringVar(&jobMode, "job-controller-mode", string(jobcontroller.ModeReplace), jobModeUsage)
	addJobBackoffFlags(fl, &ctlOpts.JobPodFailureBackOff, &ctlOpts.JobMaxPodFailureBackOff)
	addPodGCFlag(fl, &ctlOpts.TerminatedPodGCThreshold)
	addPodGCPolicyFlag(fl, &ctlOpts.TerminatedPodGCPolicy, podgc.PolicyThreshold)
	return cmd
}

// runControllers starts the named controllers against cfg and runs them
// until ctx ends or one of them fails.
const jobModeUsage = "which Jobs the job controller manages: replace (no spec.managedBy, kubernetes.io/job-controller or batchlet.dev/job-controller: in place of kube-controller-manager's) or alongside (only spec.managedBy: batchlet.dev/job-controller, beside kube-controller-manager's)"

func runControllers(ctx context.Context, cfg *rest.Config, names []string, opts controlplane.ControllerOptions, metricsAddr string, logger *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	run := func(name string, fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(); err != nil && !errors.Is(err, context.Canceled) {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	if _, err := controlplane.StartControllers(ctx, cfg, nil, names, opts, logger, reg, run); err != nil {
		return err
	}
	if metricsAddr != "" {
		if err := serveMetrics(ctx, metricsAddr, reg); err != nil {
			return err
		}
	}
	logger.Info("controllers running", "controllers", names, "server", cfg.Host)
	select {
	case <-ctx.Done():
	case err := <-errs:
		cancel()
		wg.Wait()
		return err
	}
	wg.Wait()
	return nil
}

func serveMetrics(ctx context.Context, addr string, g prometheus.Gatherer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen for metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return nil
}
