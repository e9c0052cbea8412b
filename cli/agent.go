package cli

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/agent"
	"github.com/batchlet/batchlet/apiserver"
	"github.com/batchlet/batchlet/controlplane"
	"github.com/batchlet/batchlet/results"
	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/process"
	"github.com/batchlet/batchlet/runtime/sim"
	"github.com/batchlet/batchlet/workqueue"
)

// agentFlags are the flags of `batchlet agent`.
type agentFlags struct {
	kubeconfig    string
	nodeName      string
	runtime       string
	rootDir       string
	listenAddress string
	port          int
	logLevel      string
	labels        map[string]string
	clientCAFile  string
	onShutdown    string
	resultsTail   int
	noResults     bool
}

func newAgentCommand() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run a node agent that joins a running batchlet server and runs its pods",
		Long: `Agent registers a Node with the API server named in --kubeconfig and runs
the pods the scheduler binds to it as local processes (--runtime process) or
as simulated containers (--runtime sim). It renews the node's Lease, reports
pod statuses and serves the kubelet endpoints (container logs and exec) over
HTTPS on --port, advertised in the Node's status.

The API server proxies "kubectl logs" and "kubectl exec" to those endpoints
with its admin token, so the agent accepts exactly one bearer token: the one
in its kubeconfig. Give it the server's admin kubeconfig:

  batchlet server --no-agent --data-dir /tmp/cp &
  batchlet agent --kubeconfig /tmp/cp/kubeconfig --node-name worker-1

Several agents (and the server's embedded one) can share a host: each takes
its own block of 127.0.0.0/8 for pod IPs (the Node's spec.podCIDR), and pods
sharing a subdomain find each other in /etc/hosts across nodes. Each agent
reports the host's whole cpu and memory as its capacity.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := newLogger(f.logLevel, cmd.ErrOrStderr())
			routeKlog(logger)
			return runAgent(ctx, f, logger)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the server to join (default: $KUBECONFIG, then the default data dir's)")
	fl.StringVar(&f.nodeName, "node-name", "", "name of the Node to register (default: the host name)")
	fl.StringVar(&f.runtime, "runtime", "process", "pod runtime: process, image (containers run from their images) or sim")
	fl.StringVar(&f.rootDir, "root-dir", "", "directory for the pods' files (default: a directory named after the node under the system temp dir)")
	fl.StringVar(&f.listenAddress, "listen-address", "127.0.0.1", "IP the kubelet endpoints listen on, advertised as the Node's InternalIP")
	fl.IntVar(&f.port, "port", 0, "port of the kubelet endpoints (0 picks a free one)")
	fl.StringToStringVar(&f.labels, "node-labels", nil, "labels to add to the Node, e.g. topology.kubernetes.io/zone=a,pool=gpu")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.StringVar(&f.onShutdown, "on-shutdown", controlplane.OnShutdownKeep, "what SIGTERM does to running pods: keep (they run on; an agent restarted on the same --root-dir adopts them) or drain (terminate them with their grace periods)")
	fl.StringVar(&f.clientCAFile, "client-ca-file", "", "admit log/exec requests with a client certificate signed by these CAs (a real kube-apiserver's --kubelet-client-certificate), as the kubelet's flag")
	fl.IntVar(&f.resultsTail, "results-log-tail", results.DefaultLogTailBytes, "bytes of each terminated container's log its ContainerResult keeps (negative: none)")
	fl.BoolVar(&f.noResults, "no-results", false, "record no ContainerResults (e.g. a cluster without the results.batchlet.dev CRD)")
	return cmd
}

// loadClientCAs reads a PEM bundle of CA certificates; nil for no file.
func loadClientCAs(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading --client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("--client-ca-file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// runAgent builds the client, the runtime and the agent, and runs it until
// ctx ends.
func runAgent(ctx context.Context, f agentFlags, logger *slog.Logger) error {
	if f.onShutdown != controlplane.OnShutdownKeep && f.onShutdown != controlplane.OnShutdownDrain {
		return fmt.Errorf("--on-shutdown=%s: want keep or drain", f.onShutdown)
	}
	cfg, err := agentClientConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	if cfg.BearerToken == "" {
		return fmt.Errorf("kubeconfig %s has no bearer token: the agent needs the server's admin token to authenticate log and exec requests", f.kubeconfig)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("build client: %w", err)
	}
	nodeName := agentNodeName(f.nodeName)
	rootDir := f.rootDir
	if rootDir == "" {
		rootDir = filepath.Join(os.TempDir(), "batchlet-agent-"+nodeName)
	}
	rt, err := agentRuntime(ctx, f.runtime, rootDir, logger)
	if err != nil {
		return err
	}
	clientCAs, err := loadClientCAs(f.clientCAFile)
	if err != nil {
		return err
	}
	resultsCfg := agent.ResultsConfig{LogTailBytes: f.resultsTail}
	if !f.noResults {
		if resultsCfg.Client, err = dynamic.NewForConfig(cfg); err != nil {
			return fmt.Errorf("build results client: %w", err)
		}
	}
	queueClient, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("build work queue client: %w", err)
	}
	ag, err := agent.New(agent.Config{
		Results:   resultsCfg,
		WorkQueue: agent.WorkQueueConfig{Client: queueClient, Key: workqueue.KeyFrom(cfg.BearerToken)},
		ClientCAs: clientCAs,
		Client:    client, NodeName: nodeName, Runtime: rt, Logger: logger.With("component", "agent"),
		Token: cfg.BearerToken, ListenAddress: f.listenAddress, Port: f.port, Labels: f.labels,
		Version:            apiserver.GitVersion, // the version the API reports, as the embedded agent does
		KeepPodsOnShutdown: f.onShutdown == controlplane.OnShutdownKeep,
	})
	if err != nil {
		return fmt.Errorf("node agent: %w", err)
	}
	logger.Info("batchlet agent starting", "node", nodeName, "server", cfg.Host, "port", ag.Port(), "runtime", f.runtime, "rootDir", rootDir)
	return ag.Run(ctx)
}

// agentClientConfig loads path, or $KUBECONFIG, or the default data dir's
// kubeconfig.
func agentClientConfig(path string) (*rest.Config, error) {
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path == "" {
		path = controlplane.KubeconfigPath(controlplane.DefaultDataDir())
	}
	loading := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, nil
}

// agentNodeName is name, or the lower-cased host name.
func agentNodeName(name string) string {
	if name == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "batchlet-node"
		}
		name = h
	}
	return strings.ToLower(name)
}

func agentRuntime(ctx context.Context, kind, rootDir string, logger *slog.Logger) (runtime.Runtime, error) {
	switch kind {
	case "sim":
		return sim.New(ctx, clock.RealClock{}), nil
	case "process", "image":
		cfg := process.Config{RootDir: rootDir, Logger: logger.With("component", "runtime")}
		// The image store sits beside the pod directories, not among them.
		err := process.WithImages(&cfg, process.ImageOptions{Dir: rootDir + "-images", ByDefault: kind == "image"})
		if err != nil {
			return nil, fmt.Errorf("%s runtime: %w", kind, err)
		}
		rt, err := process.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s runtime: %w", kind, err)
		}
		return rt, nil
	}
	return nil, fmt.Errorf("unknown runtime %q: want process, image or sim", kind)
}
