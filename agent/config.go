package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/pki"
	"github.com/batchlet/batchlet/results"
	"github.com/batchlet/batchlet/runtime"
)

// StatusPatchFunc patches the status of pod namespace/name with data, a
// patch of type pt, as Client's pods/status patch would, and answers the
// patched pod's resourceVersion.
type StatusPatchFunc func(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) (string, error)

// Config configures an Agent.
type Config struct {
	Client   kubernetes.Interface
	NodeName string
	Runtime  runtime.Runtime
	// Clock defaults to the real clock.
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Token is the bearer token the logs/exec endpoints require; empty
	// disables the check.
	Token string
	// ListenAddress is the IP the endpoints listen on and the Node's
	// InternalIP; default 127.0.0.1.
	ListenAddress string
	// Port of the endpoints; 0 picks a free one. Negative disables serving.
	Port int
	// TLSCertificate serves the endpoints; nil generates a self-signed one.
	TLSCertificate *tls.Certificate
	// GetCertificate, when set, picks the serving certificate of each
	// handshake instead (one that arrives or rotates after the start).
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// AuthorizedClients are the user names (certificate common names)
	// whose client certificates may call the endpoints, beyond members of
	// system:masters; default the API server's kubelet client,
	// kube-apiserver-kubelet-client.
	AuthorizedClients []string
	// ClientCAs, like the kubelet's --client-ca-file, admits a request whose
	// client certificate they sign without a token: a real kube-apiserver
	// proxies logs and exec with --kubelet-client-certificate, not a token.
	ClientCAs *x509.CertPool
	// PodIPs hands out pod IPs; nil uses NewLoopbackAllocator().
	PodIPs IPAllocator
	// MaxPods is the Node's pods capacity; default 110.
	MaxPods int
	// Capacity overrides the host's cpu and memory when set.
	Capacity corev1.ResourceList
	// Labels are added to the Node's labels.
	Labels map[string]string
	// Workers sync pods in parallel; default 32. A worker mostly waits
	// for the durable commit of a pod's status write, so with 8 the agent
	// was where most of a 1,000-pod Job's live pods queued (bound, not
	// started or not reported) on a disk-backed store.
	Workers int
	// LeaseDuration of the node Lease; renewed every quarter. Default 40s.
	LeaseDuration time.Duration
	// NodeStatusInterval between Node status heartbeats; default 1 minute.
	NodeStatusInterval time.Duration
	// ShutdownGracePeriod caps the grace of pods killed when the agent
	// stops; default 30s.
	ShutdownGracePeriod time.Duration
	// KeepPodsOnShutdown leaves running pods running when the agent stops
	// (batchlet server --on-shutdown=keep) instead of terminating them as
	// a node shutdown does; the runtime must keep its containers beyond
	// the agent process (runtime.Adopter).
	KeepPodsOnShutdown bool
	// Version is reported as nodeInfo.kubeletVersion.
	Version string
	// FirstStatusDelay holds a started pod's first status back while it is
	// not terminal, so that a pod whose containers end within it goes from
	// Pending to its terminal phase in one write instead of two (the
	// kubelet, which sees containers start when it relists them every
	// second, rarely writes Running for those either). Default 50ms;
	// negative writes at once.
	FirstStatusDelay time.Duration
	// EventQPS and EventBurst limit the events the agent records, as the
	// kubelet's --event-qps and --event-burst do (defaults 50 and 100);
	// events beyond them are dropped. A negative EventQPS records all.
	EventQPS   float32
	EventBurst int
	// NewInformerFactory, when set, builds the informer factory for this
	// node's pods (tweak selects them and must edit every list and watch);
	// the embedded agent uses it to read the API server's store directly.
	// Nil builds one over Client.
	NewInformerFactory func(tweak func(*metav1.ListOptions)) (informers.SharedInformerFactory, error)
	// PatchStatus, when set, sends the agent's pods/status patches
	// instead of Client and answers only the patched pod's
	// resourceVersion, all the agent keeps of the answer: an API server in
	// the same process then makes no copy of the pod for it
	// (apiserver.InProcessCalls.PatchVersion). Nil patches through Client.
	PatchStatus StatusPatchFunc
	// Results keeps a record of every terminated container attempt.
	Results ResultsConfig
	// WorkQueue serves the built-in work queue to the pods that ask.
	WorkQueue WorkQueueConfig
}

func (c *Config) defaults() error {
	if c.Client == nil || c.Runtime == nil || c.NodeName == "" {
		return fmt.Errorf("agent: Client, Runtime and NodeName are required")
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if len(c.AuthorizedClients) == 0 {
		c.AuthorizedClients = []string{pki.KubeletClientUser}
	}
	if c.ListenAddress == "" {
		c.ListenAddress = "127.0.0.1"
	}
	if c.PodIPs == nil {
		c.PodIPs = NewLoopbackAllocator()
	}
	if c.MaxPods == 0 {
		c.MaxPods = 110
	}
	if c.Workers == 0 {
		c.Workers = 32
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 40 * time.Second
	}
	if c.NodeStatusInterval == 0 {
		c.NodeStatusInterval = time.Minute
	}
	if c.ShutdownGracePeriod == 0 {
		c.ShutdownGracePeriod = 30 * time.Second
	}
	if c.FirstStatusDelay == 0 {
		c.FirstStatusDelay = 50 * time.Millisecond
	}
	if c.EventQPS == 0 {
		c.EventQPS = 50
	}
	if c.EventBurst <= 0 {
		c.EventBurst = 100
	}
	if c.Results.LogTailBytes == 0 {
		c.Results.LogTailBytes = results.DefaultLogTailBytes
	}
	if c.Version == "" {
		c.Version = "v1.36.0-batchlet"
	}
	return nil
}
