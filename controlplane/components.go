package controlplane

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	jobsetclient "sigs.k8s.io/jobset/client-go/clientset/versioned"
	jobsetinformers "sigs.k8s.io/jobset/client-go/informers/externalversions"

	"github.com/batchlet/batchlet/agent"
	"github.com/batchlet/batchlet/apiserver"
	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/inprocclient"
	"github.com/batchlet/batchlet/apiserver/openapi"
	"github.com/batchlet/batchlet/apiserver/satoken"
	"github.com/batchlet/batchlet/controller/rootca"
	"github.com/batchlet/batchlet/pki"
	"github.com/batchlet/batchlet/results"
	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/process"
	"github.com/batchlet/batchlet/runtime/sim"
	"github.com/batchlet/batchlet/storage"
	"github.com/batchlet/batchlet/storage/bolt"
	"github.com/batchlet/batchlet/storage/memory"
	"github.com/batchlet/batchlet/workqueue"
)

// StoreFile is the bbolt database inside the data dir.
const StoreFile = "state.db"

// Sync batching for the Job controller: upstream batches pod-triggered syncs
// over 1 s; a short window keeps the batching benefit at high pod rates
// without adding visible latency.
const jobSyncBatchPeriod = 5 * time.Millisecond

type apiServer struct {
	handler   http.Handler
	inProcess *rest.Config
	local     LocalSource
	run       func(ctx context.Context) error
	// advertise tells the server where clients reach it (the kubernetes
	// Service's endpoints); call before run.
	advertise func(netip.AddrPort)
}

// storeHistoryWindow is how many recent events the store keeps in memory
// for watches that start from an earlier revision (the store's default is
// 10,000); older ones, within the store's kept log, are replayed from the
// file. Each event holds its new value, so the window is live heap: 2,500
// instead of 10,000 took about 5 MB off sim 100,000 x 1,000's (a tenth),
// and at the thousands of events a second of a busy server neither is
// more than a few seconds of history.
const storeHistoryWindow = 2500

func openStore(opts Options, existing bool) (storage.Backend, error) {
	if opts.InMemory {
		return memory.New(100_000), nil
	}
	b, err := bolt.Open(filepath.Join(opts.DataDir, StoreFile), bolt.Options{
		HistoryWindow: storeHistoryWindow,
		NoSync:        opts.Ephemeral, MustExist: existing, Logger: opts.Logger.With("component", "store"),
	})
	if err != nil {
		if existing {
			return nil, fmt.Errorf("data dir %s (credentials %s, %s from an earlier start): %w", opts.DataDir, pki.CAFile, pki.TokenFile, err)
		}
		return nil, err
	}
	return b, nil
}

// hasCredentials reports whether dir holds the CA or token of an earlier
// start.
func hasCredentials(dir string) bool {
	for _, name := range []string{pki.CAFile, pki.CAKeyFile, pki.TokenFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

func newAPIServer(cp *ControlPlane, bundle *pki.Bundle) (*apiServer, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cp.registry = reg
	oa, err := openapi.New()
	if err != nil {
		return nil, fmt.Errorf("build openapi: %w", err)
	}
	issuer, err := satoken.NewIssuer(bundle.ServiceAccountKey, "", clock.RealClock{})
	if err != nil {
		return nil, err
	}
	srv, err := apiserver.New(apiserver.Config{
		Storage:              cp.store,
		Authenticator:        endpoints.TokenMap{bundle.Token: endpoints.AdminUser()},
		ServiceAccountIssuer: issuer,
		RBAC:                 true,
		NodeTLS:              nodeTLS(bundle),
		Clock:                clock.RealClock{},
		Logger:               cp.log.With("component", "apiserver"),
		Registerer:           reg,
		Gatherer:             reg,
		OpenAPIV2:            oa.V2Handler(),
		OpenAPIV3:            oa.V3Handler(),
	})
	if err != nil {
		return nil, fmt.Errorf("build API server: %w", err)
	}
	return &apiServer{handler: srv.Handler(), inProcess: srv.InProcessConfig(), local: srv, run: srv.Run, advertise: srv.AdvertiseAt}, nil
}

// nodeTLS is how the server reaches node agents: it verifies their
// serving certificates with its CA and presents its kubelet client
// certificate.
func nodeTLS(bundle *pki.Bundle) *tls.Config {
	return &tls.Config{RootCAs: bundle.CA.Pool(), Certificates: []tls.Certificate{bundle.KubeletClientCert}, MinVersion: tls.VersionTLS12}
}

// advertiseAddr is the address the kubernetes Service's endpoints name:
// the bind address, or for a wildcard bind the host's default interface
// (as kube-apiserver picks its advertise address), and the API's port.
func advertiseAddr(bind, apiURL string) (netip.AddrPort, error) {
	u, err := url.Parse(apiURL)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("parsing API URL: %w", err)
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("parsing API port: %w", err)
	}
	return netip.AddrPortFrom(advertiseIP(bind), uint16(port)), nil
}

// advertiseIP is the bind address, or for a wildcard bind the host's
// default interface.
func advertiseIP(bind string) netip.Addr {
	ip, err := netip.ParseAddr(bind)
	if err != nil || ip.IsUnspecified() {
		ip = netip.MustParseAddr("127.0.0.1")
		if host, err := utilnet.ChooseHostInterface(); err == nil {
			if a, ok := netip.AddrFromSlice(host); ok {
				ip = a.Unmap()
			}
		}
	}
	return ip
}

// certHosts are the names the serving certificate covers beyond localhost:
// the bind address, the advertised address pods are told to use
// (KUBERNETES_SERVICE_HOST) and the kubernetes Service's DNS names.
func certHosts(bind string) []string {
	return []string{bind, advertiseIP(bind).String(),
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
}

// rootCAOf is the CA bundle that verifies the API of cfg: its CA data or
// file, or for the in-process config (which has none) the CA the server's
// local source carries (see withRootCA).
func rootCAOf(cfg *rest.Config, src LocalSource) ([]byte, error) {
	switch {
	case len(cfg.CAData) > 0:
		return cfg.CAData, nil
	case cfg.CAFile != "":
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA file: %w", err)
		}
		return b, nil
	}
	if s, ok := src.(interface{ RootCA() []byte }); ok {
		return s.RootCA(), nil
	}
	return nil, nil
}

// localWithCA is the server's local source, carrying the CA its clients
// would verify it with were they not in-process.
type localWithCA struct {
	LocalSource
	ca []byte
}

func (l localWithCA) RootCA() []byte { return l.ca }

// inProcessCalls is the typed write path of the API server src is, when
// it is one in this process (whose in-process config the clients use):
// the typed clients' hot calls then skip encoding and HTTP plumbing.
func inProcessCalls(src LocalSource) inprocclient.Server {
	if l, ok := src.(localWithCA); ok {
		src = l.LocalSource
	}
	if s, ok := src.(interface {
		InProcessCalls() *apiserver.InProcessCalls
	}); ok {
		return s.InProcessCalls()
	}
	return nil
}

// clients are the in-process clients every component shares.
type clients struct {
	kube      kubernetes.Interface
	jobsets   jobsetclient.Interface
	meta      metadata.Interface
	informers informers.SharedInformerFactory
	jobsetInf jobsetinformers.SharedInformerFactory
	metaInf   metadatainformer.SharedInformerFactory
	local     LocalSource
	// rootCA is the CA bundle (PEM) that verifies the API, which the root
	// CA publisher puts in every namespace.
	rootCA []byte
}

// newClients builds the clients over cfg; with src, the pod, Job, node and
// metadata informers read the API server's store in this process.
func newClients(cfg *rest.Config, src LocalSource) (*clients, error) {
	httpKube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("build client: %w", err)
	}
	var kube kubernetes.Interface = httpKube
	if calls := inProcessCalls(src); calls != nil {
		kube = inprocclient.New(httpKube, calls)
	}
	jobsets, err := jobsetclient.NewForConfig(jsonConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("build jobset client: %w", err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("build metadata client: %w", err)
	}
	typed, err := newTypedFactory(kube, src, controllerKinds, nil)
	if err != nil {
		return nil, fmt.Errorf("build informers: %w", err)
	}
	rootCA, err := rootCAOf(cfg, src)
	if err != nil {
		return nil, err
	}
	return &clients{
		kube: kube, jobsets: jobsets, meta: meta, local: src, rootCA: rootCA,
		informers: typed,
		jobsetInf: jobsetinformers.NewSharedInformerFactoryWithOptions(jobsets, 0, jobsetinformers.WithTransform(trimManagedFields)),
		metaInf:   newMetadataFactory(meta, src),
	}, nil
}

// jsonConfig is cfg speaking JSON: JobSets have no protobuf encoding, on
// batchlet's API as on a real cluster's CRD, while the in-process config
// asks for protobuf.
func jsonConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = apiruntime.ContentTypeJSON
	cfg.AcceptContentTypes = apiruntime.ContentTypeJSON
	return cfg
}

// waitForRootCA waits (briefly) until the root CA publisher has put
// kube-root-ca.crt into the default namespace: a pod submitted right after
// start (batchlet run) mounts its service-account volume at once instead
// of retrying the mount as the kubelet would.
func (cp *ControlPlane) waitForRootCA(ctx context.Context, kube kubernetes.Interface) {
	err := wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, rootca.ConfigMapName, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		cp.log.Warn("kube-root-ca.crt not yet published in the default namespace; pods mounting it retry", "err", err.Error())
	}
}

func (cp *ControlPlane) startComponents(ctx context.Context, bundle *pki.Bundle) error {
	cfg := cp.ClientConfig()
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit in-process
	c, err := StartControllers(ctx, cfg, localWithCA{cp.local, bundle.CAPEM}, cp.opts.Controllers,
		ControllerOptions{ResultRetention: cp.opts.ResultRetention, ClusterSigner: bundle.CA,
			JobPodFailureBackOff: cp.opts.JobPodFailureBackOff, JobMaxPodFailureBackOff: cp.opts.JobMaxPodFailureBackOff,
			TerminatedPodGCThreshold: cp.opts.TerminatedPodGCThreshold,
			TerminatedPodGCPolicy:    cp.opts.TerminatedPodGCPolicy}, cp.log, cp.registry, cp.goRun)
	if err != nil {
		return err
	}
	if slices.Contains(cp.opts.Controllers, RootCAPublisher) {
		cp.waitForRootCA(ctx, c.kube)
	}
	if cp.opts.NoAgent {
		return nil
	}
	rt, err := cp.newRuntime(ctx)
	if err != nil {
		return err
	}
	resultsCfg, err := cp.resultsConfig(cfg)
	if err != nil {
		return err
	}
	queueClient, err := dynamic.NewForConfig(jsonConfig(cfg))
	if err != nil {
		return fmt.Errorf("work queue client: %w", err)
	}
	ag, err := agent.New(agent.Config{
		PatchStatus: cp.statusPatcher(),
		Results:     resultsCfg,
		WorkQueue:   agent.WorkQueueConfig{Client: queueClient, Key: workqueue.KeyFrom(bundle.Token)},
		Client:      c.kube, NodeName: sanitizeNodeName(cp.opts.NodeName), Runtime: rt,
		Logger: cp.log.With("component", "agent"), Port: 0,
		// Only the API server's kubelet client certificate (or an admin's)
		// reaches the endpoints, as on a joined agent.
		ClientCAs: bundle.CA.Pool(),
		Version:   apiserver.GitVersion, MaxPods: cp.opts.MaxPods, KeepPodsOnShutdown: cp.opts.OnShutdown == OnShutdownKeep,
		// The API's serving certificate covers 127.0.0.1 too; generating a
		// self-signed RSA pair instead costs ≈ 100 ms of every cold start.
		TLSCertificate: &bundle.ServerCert, // one version across API and kubelet, as a real cluster reports
		NewInformerFactory: func(tweak func(*metav1.ListOptions)) (informers.SharedInformerFactory, error) {
			return newTypedFactory(c.kube, c.local, []localKind{localPods}, tweak) // the agent watches only its pods
		},
	})
	if err != nil {
		return fmt.Errorf("node agent: %w", err)
	}
	cp.goRun("agent", func() error { return ag.Run(ctx) })
	return nil
}

// statusPatcher is the embedded agent's pods/status patch: straight to
// the API server in this process, answering only the resourceVersion
// (nil, through the agent's client, when the server is not here).
func (cp *ControlPlane) statusPatcher() agent.StatusPatchFunc {
	calls, ok := inProcessCalls(cp.local).(*apiserver.InProcessCalls)
	if !ok {
		return nil
	}
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	return func(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) (string, error) {
		return calls.PatchVersion(ctx, pods, namespace, name, pt, data, metav1.PatchOptions{}, "status")
	}
}

// resultsConfig is the embedded agent's: a typed writer handing its
// results to the API server in this process as decoded JSON objects
// (results are a CRD, without protobuf), unless results are off.
func (cp *ControlPlane) resultsConfig(cfg *rest.Config) (agent.ResultsConfig, error) {
	if cp.opts.NoResults {
		return agent.ResultsConfig{}, nil
	}
	if calls, ok := inProcessCalls(cp.local).(*apiserver.InProcessCalls); ok {
		// Results go over as the objects their bodies decode to: encoding
		// and decoding them was most of the server's cost of a result.
		w := results.NewRawPostWriter(func(ctx context.Context, namespace string, raw map[string]interface{}) error {
			return calls.CreateRaw(ctx, results.GVR, namespace, raw, metav1.CreateOptions{})
		}, func(ctx context.Context, namespace string, body []byte) error {
			return calls.CreateJSON(ctx, results.GVR, namespace, body, metav1.CreateOptions{})
		})
		return agent.ResultsConfig{Writer: w, LogTailBytes: cp.opts.ResultsLogTail}, nil
	}
	w, err := results.NewWriter(cfg)
	if err != nil {
		return agent.ResultsConfig{}, fmt.Errorf("results client: %w", err)
	}
	return agent.ResultsConfig{Writer: w, LogTailBytes: cp.opts.ResultsLogTail}, nil
}

// RemovePodsMemory frees what the process runtime of the control plane
// on dataDir keeps in memory (process.Config.MemoryDir), for who removes
// that data dir.
func RemovePodsMemory(dataDir string) {
	process.RemoveMemoryDir(filepath.Join(dataDir, "pods"))
}

func (cp *ControlPlane) newRuntime(ctx context.Context) (runtime.Runtime, error) {
	switch cp.opts.Runtime {
	case "sim":
		return sim.New(ctx, clock.RealClock{}), nil
	case "process", "image":
		// Containers of a throwaway data dir die with the process: nothing
		// would adopt them.
		// Pods see nothing of the data dir: its store, credentials and
		// kubeconfig are the cluster's admin rights.
		podsDir := filepath.Join(cp.opts.DataDir, "pods")
		cfg := process.Config{RootDir: podsDir, Logger: cp.log.With("component", "runtime"),
			NoShims: cp.opts.Ephemeral, HidePaths: []string{cp.opts.DataDir}, ShimSupervisor: cp.opts.ShimSupervisor,
			MemoryDir: process.DefaultMemoryDir(podsDir)}
		err := process.WithImages(&cfg, process.ImageOptions{Dir: filepath.Join(cp.opts.DataDir, "images"), ByDefault: cp.opts.Runtime == "image",
			Mirrors: cp.opts.RegistryMirrors, DockerConfig: cp.opts.DockerConfig})
		if err != nil {
			return nil, fmt.Errorf("%s runtime: %w", cp.opts.Runtime, err)
		}
		rt, err := process.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s runtime: %w", cp.opts.Runtime, err)
		}
		return rt, nil
	}
	return nil, fmt.Errorf("unknown runtime %q: want process, image or sim", cp.opts.Runtime)
}
