// Package controlplane assembles one batchlet control plane in a process:
// credentials, the durable store, the API server on HTTPS, the controllers,
// the scheduler and (optionally) an embedded node agent. `batchlet server`
// and `batchlet run` are thin wrappers around it.
package controlplane

import (
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/batchlet/batchlet/results"
)

// Options configures a control plane.
type Options struct {
	// DataDir holds the store, the credentials and the kubeconfig.
	DataDir string
	// BindAddress and Port are where the HTTPS API listens; Port 0 picks a
	// free port.
	BindAddress string
	Port        int
	// Runtime is the embedded agent's pod runtime: "process", "image"
	// (pods run from their images) or "sim". With "process" a pod can
	// still ask for its image (runtimeClassName: image).
	Runtime string
	// RegistryMirrors ("registry=mirror") and DockerConfig (a docker
	// config.json with credentials) configure image pulls.
	RegistryMirrors []string
	DockerConfig    string
	// NoAgent disables the embedded node agent.
	NoAgent bool
	// OnShutdown is what the embedded agent does with running pods when
	// the control plane shuts down: "keep" leaves them running for the
	// next server on the same data dir to adopt; "drain" (or empty)
	// terminates them with their grace periods, as a node shutdown does.
	OnShutdown string
	// MaxPods is the embedded node's pod capacity; 0 picks 1,000 for the
	// process runtime (a machine runs far more than a kubelet's 110 batch
	// processes) and 1,000,000 for sim (pods cost no processes).
	MaxPods int
	// NodeName of the embedded agent; the host name by default.
	NodeName string
	// Controllers to run in-process; nil means DefaultControllers(), empty none
	// (then `batchlet controllers` can run them from another process).
	Controllers []string
	// InMemory keeps the store in memory (tests only).
	InMemory bool
	// Ephemeral skips fsync in the durable store: for a data dir that is
	// deleted when the process ends (`batchlet run` without --data-dir), so
	// durability buys nothing, while the store's semantics (history for
	// watches and paged lists) stay those of the server.
	Ephemeral bool
	// ResultsLogTail is how many bytes of each terminated container's log
	// its ContainerResult keeps; 0 takes results.DefaultLogTailBytes,
	// negative keeps none.
	ResultsLogTail int
	// NoResults: the embedded agent records no ContainerResults.
	NoResults bool
	// ShimSupervisor: the process runtime's containers are served by one
	// shim supervisor per node instead of a shim each
	// (process.Config.ShimSupervisor; batchlet server's default).
	ShimSupervisor bool
	// ResultRetention bounds the kept ContainerResults by age and number
	// (zero values take the result-retention controller's defaults).
	ResultRetention results.Retention
	// JobPodFailureBackOff and JobMaxPodFailureBackOff are the Job
	// controller's pod-failure backoff and its cap (zero: 10s and 10m).
	JobPodFailureBackOff, JobMaxPodFailureBackOff time.Duration
	// TerminatedPodGCThreshold is how many terminated pods the pod GC
	// keeps before deleting the oldest (0: upstream's 12,500; negative:
	// none are deleted for their number).
	TerminatedPodGCThreshold int
	// TerminatedPodGCPolicy is podgc.PolicyThreshold (upstream's, the
	// default) or podgc.PolicyCounted (also delete terminated pods as soon
	// as their Job has counted them: memory then follows the live pods).
	TerminatedPodGCPolicy string
	// Dashboard serves the web dashboard at /ui (see package dashboard).
	Dashboard bool
	// Logger receives structured logs; a discard logger when nil.
	Logger *slog.Logger
}

// OnShutdown values.
const (
	OnShutdownKeep  = "keep"
	OnShutdownDrain = "drain"
)

// DefaultDataDir is ~/.batchlet.
func DefaultDataDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ".batchlet"
	}
	return filepath.Join(home, ".batchlet")
}

func (o *Options) setDefaults() {
	if o.DataDir == "" {
		o.DataDir = DefaultDataDir()
	}
	if o.BindAddress == "" {
		o.BindAddress = "127.0.0.1"
	}
	if o.Runtime == "" {
		o.Runtime = "process"
	}
	if o.NodeName == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "batchlet-node"
		}
		o.NodeName = h
	}
	if o.MaxPods == 0 {
		o.MaxPods = 1000
		if o.Runtime == "sim" {
			o.MaxPods = 1_000_000
		}
	}
	if o.Controllers == nil {
		o.Controllers = DefaultControllers()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// KubeconfigPath is where the admin kubeconfig is written inside dataDir.
func KubeconfigPath(dataDir string) string { return filepath.Join(dataDir, "kubeconfig") }
