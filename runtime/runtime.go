// Package runtime defines the seam between the node agent and whatever runs
// a pod's containers: host processes (runtime/process) or a simulation
// (runtime/sim).
//
// A Runtime owns the containers of the pods it was asked to start. It reports
// container statuses exactly as the kubelet puts them into PodStatus
// (waiting/running/terminated, restartCount, lastState); the agent derives
// the pod phase and conditions from them.
package runtime

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Runtime runs pods. All methods are safe for concurrent use.
type Runtime interface {
	// StartPod begins running pod (init containers in order, then the
	// containers) and returns once the work is under way. The pod's
	// status.podIP and status.hostIP are already filled in by the agent.
	//
	// The container statuses in pod.Status, when there are any, say where
	// to go on from (a pod resumed after an agent restart): a container
	// whose state is terminated has run to its end and is not run again;
	// any other runs, its first attempt numbered restartCount, with its
	// lastState kept until that attempt ends. Logs of earlier attempts that
	// are still on disk stay readable. A pod left with nothing to run is
	// Done at once. StartPod of a pod the runtime has already is a no-op.
	StartPod(ctx context.Context, pod *corev1.Pod, res Resolver) error
	// KillPod stops every container of the pod: SIGTERM (or the equivalent),
	// then a forced kill after grace. No container is restarted afterwards.
	// It returns when every container has terminated.
	KillPod(ctx context.Context, uid types.UID, grace time.Duration) error
	// PodStatus returns the current container statuses of a started pod.
	PodStatus(uid types.UID) (PodStatus, bool)
	// RemovePod forgets a pod (killing what is left) and frees its files.
	RemovePod(uid types.UID)
	// Subscribe registers fn, called with a pod's UID whenever its status
	// changes. fn must not block.
	Subscribe(fn func(uid types.UID))
	// Logs writes the log of one container of a started pod to w.
	Logs(ctx context.Context, uid types.UID, container string, opts LogOptions, w io.Writer) error
	// Exec runs cmd inside a running container of a pod, with its
	// environment and working directory. A non-zero exit is an *ExitError.
	Exec(ctx context.Context, uid types.UID, container string, cmd []string, s ExecStreams) error
}

// Resolver gives a runtime what it needs from the API while starting a pod.
type Resolver interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	// Hosts returns extra /etc/hosts entries for the pod (pods sharing its
	// subdomain).
	Hosts(pod *corev1.Pod) []HostEntry
}

// TokenIssuer is implemented by Resolvers that can get a pod a
// service-account token bound to it, as the kubelet's token manager does
// through the TokenRequest API: audience empty means the API's own,
// expirationSeconds is the lifetime asked for.
type TokenIssuer interface {
	ServiceAccountToken(ctx context.Context, pod *corev1.Pod, audience string, expirationSeconds int64) (string, error)
}

// APIServerLocator is implemented by Resolvers that know where pods reach
// the API server (the endpoint of the default/kubernetes Service), which
// the KUBERNETES_SERVICE_* variables name.
type APIServerLocator interface {
	APIServer(ctx context.Context) (host string, port int32, err error)
}

// HostEntry is one /etc/hosts line.
type HostEntry struct {
	IP    string
	Names []string
}

// EventRecorder receives the container events a runtime produces (Pulled,
// Created, Started, Killing, BackOff, Failed), with upstream's reasons and
// messages. fieldPath is "spec.containers{name}" or
// "spec.initContainers{name}".
type EventRecorder func(pod *corev1.Pod, fieldPath, eventType, reason, message string)

// PodStatus is what a runtime knows about a pod.
type PodStatus struct {
	InitContainerStatuses []corev1.ContainerStatus
	ContainerStatuses     []corev1.ContainerStatus
	// Done is true when no container runs and none will be restarted.
	Done bool
}

// LogOptions select what Logs writes; they mirror corev1.PodLogOptions.
type LogOptions struct {
	Follow     bool
	Previous   bool
	Timestamps bool
	TailLines  *int64
	LimitBytes *int64
	// SinceTime drops lines written before it (from sinceSeconds or
	// sinceTime).
	SinceTime *time.Time
}

// TerminalSize is a resize request of an exec session with a TTY.
type TerminalSize struct {
	Width, Height uint16
}

// ExecStreams are the streams of an exec session; nil means not requested.
type ExecStreams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	TTY            bool
	Resize         <-chan TerminalSize
}

// ExitError reports an exec'd command that exited non-zero. It satisfies
// k8s.io/utils/exec.ExitError.
type ExitError struct{ Code int }

func (e *ExitError) Error() string {
	return fmt.Sprintf("command terminated with exit code %d", e.Code)
}
func (e *ExitError) String() string  { return e.Error() }
func (e *ExitError) Exited() bool    { return true }
func (e *ExitError) ExitStatus() int { return e.Code }

// ErrNotFound is returned for an unknown pod or container.
var ErrNotFound = fmt.Errorf("not found")

// NotFoundError is an ErrNotFound whose message is exactly the one the
// kubelet gives (no ": not found" suffix), so it can reach users as is.
type NotFoundError struct{ Message string }

func (e *NotFoundError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrNotFound) hold.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// NotFoundf returns a *NotFoundError with the formatted message.
func NotFoundf(format string, args ...any) error {
	return &NotFoundError{Message: fmt.Sprintf(format, args...)}
}

// Attacher is implemented by runtimes that can attach to a running
// container's standard streams (kubectl attach, kubectl run -i). Output
// written from the moment of attaching goes to s.Stdout and s.Stderr (both
// to s.Stdout with a TTY); s.Stdin feeds the container's stdin when its
// spec asks for one (stdin: true), and with stdinOnce the container's stdin
// closes when the first attached stdin ends. Attach returns when the
// container exits or ctx ends.
type Attacher interface {
	Attach(ctx context.Context, uid types.UID, container string, s ExecStreams) error
}

// Adopter is implemented by runtimes whose containers outlive the agent
// process (runtime/process: each container has a shim of its own). A
// restarted agent calls Adopt for a pod it has no record of before
// deciding anything from the pod's API status.
type Adopter interface {
	// Adopt looks for what an earlier agent process left of pod (its
	// status.podIP and hostIP filled in as for StartPod). When a container
	// still runs, or its end was recorded while no agent ran, the runtime
	// takes the pod over as StartPod would have started it: running
	// containers keep their container ID, startedAt and restartCount, and
	// recorded ends are reported as they happened. Otherwise it returns
	// Adopted false, with the container statuses the agent should go on
	// from when they differ from the API's (nil: use the API's).
	Adopt(ctx context.Context, pod *corev1.Pod, res Resolver) (Adoption, error)
	// ReapOrphans ends what an earlier agent process left running of pods
	// that must not run any more, before the agent starts anything. pods
	// maps the UID of every pod bound to the node to whether it may still
	// run (it is not terminal): the containers of the others are killed,
	// and the files of pods absent from the map (deleted while no agent
	// ran) are removed.
	ReapOrphans(pods map[types.UID]bool)
}

// Adoption is the outcome of Adopter.Adopt.
type Adoption struct {
	// Adopted: the runtime runs the pod now; StartPod is not called.
	Adopted bool
	// InitContainerStatuses and ContainerStatuses, when not adopted and
	// not nil, replace the API's: an attempt that started, whose
	// container is gone without a recorded end (the host rebooted), is
	// shown running even if the API never saw it run, so that the agent
	// counts it as lost instead of starting it a second time.
	InitContainerStatuses []corev1.ContainerStatus
	ContainerStatuses     []corev1.ContainerStatus
}
