package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/batchlet/batchlet/controller/podgc"
	"github.com/batchlet/batchlet/controlplane"
	"github.com/batchlet/batchlet/results"
)

func newServerCommand() *cobra.Command {
	var opts controlplane.Options
	var logLevel string
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a long-lived control plane: Kubernetes API, store, controllers and a node agent",
		Long: `Server runs the batchlet control plane: an HTTPS Kubernetes-compatible API
(kubectl and client-go work against it), the durable store in --data-dir,
the Job, JobSet, TTL and garbage-collection controllers, the scheduler and
an embedded node agent that runs pods as local processes.

On first start it creates a CA, a serving certificate and an admin token,
and writes <data-dir>/kubeconfig:

  KUBECONFIG=~/.batchlet/kubeconfig kubectl get ns

Pods outlive the server: each container is owned by a small shim process,
so a kill -9, a crash or an upgrade leaves them running, and a server
started again on the same --data-dir adopts them. SIGTERM leaves them
running too, unless --on-shutdown=drain.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.OnShutdown != controlplane.OnShutdownKeep && opts.OnShutdown != controlplane.OnShutdownDrain {
				return fmt.Errorf("--on-shutdown=%s: want keep or drain", opts.OnShutdown)
			}
			opts.TerminatedPodGCThreshold = podGCThreshold(opts.TerminatedPodGCThreshold)
			if err := podgc.ValidPolicy(opts.TerminatedPodGCPolicy); err != nil {
				return err
			}
			if err := validateJobBackoffFlags(opts.JobPodFailureBackOff, opts.JobMaxPodFailureBackOff); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts.Logger = newLogger(logLevel, cmd.ErrOrStderr())
			routeKlog(opts.Logger)
			cp, err := controlplane.Start(ctx, opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "batchlet server listening on %s\nexport KUBECONFIG=%s\n", cp.URL(), controlplane.KubeconfigPath(opts.DataDir))
			if login, err := cp.DashboardLoginURL(); err != nil {
				return errors.Join(err, cp.Shutdown(context.Background()))
			} else if login != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "dashboard: %s (one-time login URL)\n", login)
			}
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			return cp.Shutdown(sctx)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.DataDir, "data-dir", controlplane.DefaultDataDir(), "directory for the store, credentials and kubeconfig")
	fl.StringVar(&opts.BindAddress, "bind-address", "127.0.0.1", "address the HTTPS API listens on")
	fl.IntVar(&opts.Port, "port", 6443, "port the HTTPS API listens on (0 picks a free one)")
	fl.StringVar(&opts.Runtime, "runtime", "process", "pod runtime of the embedded agent: process, image (containers run from their images) or sim")
	fl.StringSliceVar(&opts.RegistryMirrors, "registry-mirror", nil, "pull REGISTRY's images from MIRROR instead (REGISTRY=MIRROR, e.g. docker.io=127.0.0.1:5000; repeatable)")
	fl.StringVar(&opts.DockerConfig, "docker-config", "", "docker config.json with registry credentials (default: $DOCKER_CONFIG or ~/.docker/config.json)")
	fl.BoolVar(&opts.Dashboard, "dashboard", true, "serve the web dashboard at /ui (a one-time login URL is printed at start)")
	fl.BoolVar(&opts.NoAgent, "no-agent", false, "do not run the embedded node agent")
	fl.StringVar(&opts.OnShutdown, "on-shutdown", controlplane.OnShutdownKeep, "what SIGTERM does to running pods: keep (they run on; a server restarted on the same data dir adopts them) or drain (terminate them with their grace periods)")
	fl.IntVar(&opts.MaxPods, "max-pods", 0, "pod capacity of the embedded node (default 1000 for process, 1000000 for sim)")
	fl.StringVar(&opts.NodeName, "node-name", "", "node name of the embedded agent (default: the host name)")
	fl.StringSliceVar(&opts.Controllers, "controllers", controlplane.DefaultControllers(), "controllers to run in-process (empty: none, e.g. to run `batchlet controllers` elsewhere)")
	fl.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.IntVar(&opts.ResultsLogTail, "results-log-tail", results.DefaultLogTailBytes, "bytes of each terminated container's log its ContainerResult keeps (negative: none)")
	fl.BoolVar(&opts.NoResults, "no-results", false, "the embedded agent records no ContainerResults")
	fl.BoolVar(&opts.ShimSupervisor, "shim-supervisor", true, shimSupervisorUsage)
	addRetentionFlags(fl, &opts.ResultRetention)
	addJobBackoffFlags(fl, &opts.JobPodFailureBackOff, &opts.JobMaxPodFailureBackOff)
	addPodGCFlag(fl, &opts.TerminatedPodGCThreshold)
	addPodGCPolicyFlag(fl, &opts.TerminatedPodGCPolicy, podgc.PolicyThreshold)
	return cmd
}

// shimSupervisorUsage documents --shim-supervisor (server and agent).
const shimSupervisorUsage = "process runtime: one long-lived shim supervisor serves every container instead of a shim process each (one process start less per container; if the supervisor is killed, the running containers are lost with it; false: a shim per container)"

func newKubeconfigCommand() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the admin kubeconfig of the server in --data-dir",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := os.ReadFile(controlplane.KubeconfigPath(dataDir))
			if err != nil {
				return fmt.Errorf("read kubeconfig (has `batchlet server --data-dir %s` run?): %w", dataDir, err)
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", controlplane.DefaultDataDir(), "data dir of the server")
	return cmd
}
