package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/agent"
	"github.com/batchlet/batchlet/agent/join"
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
	supervisor    bool
	maxPods       int
	kubeAPIQPS    float32
	kubeAPIBurst  int
	// Joining with a bootstrap token instead of a kubeconfig.
	server       string
	token        string
	caCertHashes []string
	certDir      string
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

An agent on another host joins with a bootstrap token ("batchlet token
create --print-join-command" on the server prints the command): it finds
the server's CA by --ca-cert-hash, asks for its own client certificate
(system:node:<name>) and a serving certificate signed by that CA, keeps
them in --cert-dir and reuses them when restarted:

  batchlet agent --server https://10.0.0.1:6443 --token abcdef.0123456789abcdef \
    --ca-cert-hash sha256:... --node-name worker-1 --listen-address 10.0.0.11

With --kubeconfig (the server's admin kubeconfig, or a node's kubelet.conf)
it uses that identity instead. Either way the endpoints admit only the API
server's kubelet client certificate (kube-apiserver-kubelet-client, signed
by the kubeconfig's CA or --client-ca-file) or an admin's.

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
	fl.BoolVar(&f.supervisor, "shim-supervisor", true, shimSupervisorUsage)
	fl.IntVar(&f.maxPods, "max-pods", 110, "the Node's pods capacity, as the kubelet's flag")
	fl.Float32Var(&f.kubeAPIQPS, "kube-api-qps", 100, "queries per second to the API server, as the kubelet's flag")
	fl.IntVar(&f.kubeAPIBurst, "kube-api-burst", 200, "burst of queries to the API server, as the kubelet's flag")
	fl.StringVar(&f.server, "server", "", "URL of the server to join with --token (https://host:port)")
	fl.StringVar(&f.token, "token", "", "bootstrap token to join with (batchlet token create)")
	fl.StringSliceVar(&f.caCertHashes, "ca-cert-hash", nil, "sha256:<hex> of the server CA's public key, as kubeadm's --discovery-token-ca-cert-hash")
	fl.StringVar(&f.certDir, "cert-dir", "", "directory of the node's keys, certificates and kubelet.conf (default: --root-dir with -pki appended)")
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
	nodeName := agentNodeName(f.nodeName)
	rootDir := f.rootDir
	if rootDir == "" {
		rootDir = filepath.Join(os.TempDir(), "batchlet-agent-"+nodeName)
	}
	certDir := f.certDir
	if certDir == "" {
		certDir = rootDir + "-pki" // beside the pod directories, not among them
	}
	cfg, err := agentIdentity(ctx, f, nodeName, certDir, logger)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = f.kubeAPIQPS, f.kubeAPIBurst
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("build client: %w", err)
	}
	rt, err := agentRuntime(ctx, f.runtime, rootDir, []string{agentKubeconfigPath(f.kubeconfig), certDir}, f.supervisor, logger)
	if err != nil {
		return err
	}
	clientCAs, err := agentClientCAs(f.clientCAFile, cfg)
	if err != nil {
		return err
	}
	serving, err := agentServing(ctx, client, f, nodeName, certDir, logger)
	if err != nil {
		return err
	}
	resultsCfg := agent.ResultsConfig{LogTailBytes: f.resultsTail}
	if !f.noResults {
		if resultsCfg.Writer, err = results.NewWriter(cfg); err != nil {
			return fmt.Errorf("build results client: %w", err)
		}
	}
	queueClient, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("build work queue client: %w", err)
	}
	queueKey, err := agentQueueKey(cfg)
	if err != nil {
		return err
	}
	ag, err := agent.New(agent.Config{
		Results:   resultsCfg,
		WorkQueue: agent.WorkQueueConfig{Client: queueClient, Key: queueKey},
		ClientCAs: clientCAs, GetCertificate: serving.GetCertificate,
		Client: client, NodeName: nodeName, Runtime: rt, Logger: logger.With("component", "agent"),
		Token: cfg.BearerToken, ListenAddress: f.listenAddress, Port: f.port, Labels: f.labels, MaxPods: f.maxPods,
		Version:            apiserver.GitVersion, // the version the API reports, as the embedded agent does
		KeepPodsOnShutdown: f.onShutdown == controlplane.OnShutdownKeep,
	})
	if err != nil {
		return fmt.Errorf("node agent: %w", err)
	}
	logger.Info("batchlet agent starting", "node", nodeName, "server", cfg.Host, "port", ag.Port(), "runtime", f.runtime, "rootDir", rootDir)
	return ag.Run(ctx)
}

// agentQueueKey is the secret the work queue's per-pod URLs are derived
// from: something only this node holds and keeps across restarts — its
// bearer token, or the private key of its client certificate (a node that
// joined with a bootstrap token has no token).
func agentQueueKey(cfg *rest.Config) ([]byte, error) {
	switch {
	case cfg.BearerToken != "":
		return workqueue.KeyFrom(cfg.BearerToken), nil
	case len(cfg.KeyData) > 0:
		return workqueue.KeyFrom(string(cfg.KeyData)), nil
	case cfg.KeyFile != "":
		key, err := os.ReadFile(cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("work queue key: %w", err)
		}
		return workqueue.KeyFrom(string(key)), nil
	}
	return nil, fmt.Errorf("work queue key: the agent's credentials have neither a token nor a client key")
}

// agentKubeconfigPath is path, or $KUBECONFIG, or the default data dir's
// kubeconfig.
func agentKubeconfigPath(path string) string {
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path == "" {
		path = controlplane.KubeconfigPath(controlplane.DefaultDataDir())
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path
}

// agentClientConfig loads path, or $KUBECONFIG, or the default data dir's
// kubeconfig.
func agentClientConfig(path string) (*rest.Config, error) {
	path = agentKubeconfigPath(path)
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

// agentRuntime makes the agent's runtime; pods do not see hide (the
// agent's kubeconfig, with the admin token).
func agentRuntime(ctx context.Context, kind, rootDir string, hide []string, supervisor bool, logger *slog.Logger) (runtime.Runtime, error) {
	switch kind {
	case "sim":
		return sim.New(ctx, clock.RealClock{}), nil
	case "process", "image":
		cfg := process.Config{RootDir: rootDir, Logger: logger.With("component", "runtime"), HidePaths: append(hide, rootDir+"-images"),
			ShimSupervisor: supervisor, MemoryDir: process.DefaultMemoryDir(rootDir)}
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

// agentIdentity is the client configuration the agent acts with: the
// node's own certificate (joining with --token if it has none yet) or
// --kubeconfig's.
func agentIdentity(ctx context.Context, f agentFlags, nodeName, certDir string, logger *slog.Logger) (*rest.Config, error) {
	if f.token == "" && f.server == "" {
		return agentClientConfig(f.kubeconfig)
	}
	if f.server == "" {
		return nil, fmt.Errorf("--token needs --server")
	}
	cfg, err := join.ClientConfig(ctx, join.Options{Server: f.server, Token: f.token, CACertHashes: f.caCertHashes,
		NodeName: nodeName, Dir: certDir, Logger: logger.With("component", "join")})
	if err != nil {
		return nil, fmt.Errorf("join %s: %w", f.server, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, nil
}

// agentClientCAs verify the API server's client certificate on the
// endpoints: --client-ca-file's, else the CA the agent trusts the API
// with (batchlet's CA signs both).
func agentClientCAs(path string, cfg *rest.Config) (*x509.CertPool, error) {
	if path != "" {
		return loadClientCAs(path)
	}
	caPEM, err := caOf(cfg)
	if err != nil {
		return nil, fmt.Errorf("no CA to verify the API server's client certificate with (give --client-ca-file): %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("the kubeconfig's CA holds no PEM certificate")
	}
	return pool, nil
}

// Serving certificate waits: a joined agent talks to a batchlet server,
// whose signer answers at once; an agent with a kubeconfig may face a
// cluster where no one approves kubelet-serving requests.
const (
	servingWaitJoined     = time.Minute
	servingWaitKubeconfig = 10 * time.Second
)

// agentServing asks the cluster CA for the endpoints' serving
// certificate, serving a self-signed one until (or unless) it is issued.
func agentServing(ctx context.Context, client kubernetes.Interface, f agentFlags, nodeName, certDir string, logger *slog.Logger) (*join.Serving, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(f.listenAddress, nil, []string{nodeName, "localhost"})
	if err != nil {
		return nil, fmt.Errorf("self-signed serving certificate: %w", err)
	}
	fallback, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("self-signed serving certificate: %w", err)
	}
	req := join.ServingRequest{NodeName: nodeName, DNSNames: []string{nodeName}, Dir: certDir, Fallback: &fallback,
		Logger: logger.With("component", "serving-certificate")}
	if ip := net.ParseIP(f.listenAddress); ip != nil {
		req.IPs = []net.IP{ip}
	}
	wait := servingWaitKubeconfig
	if f.token != "" {
		wait = servingWaitJoined
	}
	return join.NewServing(ctx, client, req, wait)
}
