package workqueue

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// DefaultPort is the port the queue API listens on, on each pod's own IP.
const DefaultPort = 10270

// sweepInterval bounds how often a queue with no free item checks that
// the pods holding its leases still run.
const sweepInterval = 2 * time.Second

// Config configures a Manager.
type Config struct {
	// Client reads and writes WorkQueues; Kube reads pods.
	Client dynamic.Interface
	Kube   kubernetes.Interface
	// Port on each pod's IP; 0 takes DefaultPort.
	Port int
	// Key derives each pod's secret; it must be the same across restarts
	// of the agent for adopted pods to keep their queue. Empty takes a
	// random key.
	Key    []byte
	Clock  clock.PassiveClock
	Logger *slog.Logger
}

// ConfigMapGetter reads a ConfigMap (the agent's resolver).
type ConfigMapGetter func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)

// Manager serves the queue API of the pods of one node and keeps their
// queues' state in the API.
type Manager struct {
	cfg Config
	mu  sync.Mutex
	// pods are the pods served, by UID.
	pods map[types.UID]*podServer
	// queues caches the last stored WorkQueue of each queue (namespace/name).
	queues map[string]*queueRef
}

type podServer struct {
	pod       Pod
	namespace string
	queue     string
	srv       *http.Server
}

// queueRef serializes this process's updates of one queue, so that its
// own pods never conflict with each other.
type queueRef struct {
	mu        sync.Mutex
	stored    *unstructured.Unstructured
	lastSweep time.Time
}

// NewManager returns a Manager; a nil Client makes a Manager that refuses
// queue pods.
func NewManager(cfg Config) *Manager {
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if len(cfg.Key) == 0 {
		cfg.Key = make([]byte, 32)
		_, _ = rand.Read(cfg.Key)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Manager{cfg: cfg, pods: map[types.UID]*podServer{}, queues: map[string]*queueRef{}}
}

// Wants says whether pod asks for a work queue.
func Wants(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[Annotation]
	return ok
}

// Prepare makes ready the queue of a pod that asks for one (its WorkQueue
// exists, the API listens on podIP) and returns the variables its
// containers get. A pod that does not ask gets none.
func (m *Manager) Prepare(ctx context.Context, pod *corev1.Pod, podIP string, configMap ConfigMapGetter) ([]corev1.EnvVar, error) {
	v, ok := pod.Annotations[Annotation]
	if !ok {
		return nil, nil
	}
	if m.cfg.Client == nil {
		return nil, fmt.Errorf("work queue: this node agent has no client for %s", GVR.GroupResource())
	}
	src, err := ParseSource(v)
	if err != nil {
		return nil, err
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "Job" {
		return nil, fmt.Errorf("work queue: annotation %s needs a pod of a Job", Annotation)
	}
	if pod.Spec.HostNetwork {
		return nil, fmt.Errorf("work queue: annotation %s needs a pod of its own IP, not hostNetwork", Annotation)
	}
	if err := m.ensureQueue(ctx, pod.Namespace, owner, src, configMap); err != nil {
		return nil, err
	}
	url, err := m.serve(pod, podIP, owner.Name)
	if err != nil {
		return nil, err
	}
	return []corev1.EnvVar{{Name: EnvURL, Value: url}}, nil
}

// ensureQueue finds the Job's WorkQueue or makes it from the source. A
// queue of an earlier Job of the same name is replaced.
func (m *Manager) ensureQueue(ctx context.Context, ns string, job *metav1.OwnerReference, src Source, configMap ConfigMapGetter) error {
	ref := m.queue(ns, job.Name)
	ref.mu.Lock()
	defer ref.mu.Unlock()
	if ref.stored != nil && ref.stored.GetLabels()[jobUIDLabel] == string(job.UID) {
		return nil
	}
	client := m.cfg.Client.Resource(GVR).Namespace(ns)
	for range 5 {
		u, err := client.Get(ctx, job.Name, metav1.GetOptions{})
		switch {
		case err == nil && u.GetLabels()[jobUIDLabel] == string(job.UID):
			ref.stored = u
			return nil
		case err == nil:
			uid := u.GetUID()
			err = client.Delete(ctx, job.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("work queue: replace %s/%s of an earlier Job: %w", ns, job.Name, err)
			}
			continue
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("work queue: get %s/%s: %w", ns, job.Name, err)
		}
		created, err := m.create(ctx, ns, job, src, configMap)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return err
		}
		ref.stored = created
		return nil
	}
	return fmt.Errorf("work queue: %s/%s keeps changing", ns, job.Name)
}

// jobUIDLabel marks a WorkQueue with its Job's UID.
const jobUIDLabel = "batch.kubernetes.io/controller-uid"

func (m *Manager) create(ctx context.Context, ns string, job *metav1.OwnerReference, src Source, configMap ConfigMapGetter) (*unstructured.Unstructured, error) {
	cm, err := configMap(ctx, ns, src.ConfigMap)
	if err != nil {
		return nil, fmt.Errorf("work queue: ConfigMap %q (annotation %s): %w", src.ConfigMap, Annotation, err)
	}
	items, err := src.Items(cm)
	if err != nil {
		return nil, fmt.Errorf("work queue: %w", err)
	}
	q := &WorkQueue{ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: ns,
		Labels:          map[string]string{jobUIDLabel: string(job.UID), "batch.kubernetes.io/job-name": job.Name},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: job.APIVersion, Kind: job.Kind, Name: job.Name, UID: job.UID}}},
		Spec: WorkQueueSpec{JobName: job.Name, JobUID: string(job.UID), Source: src.String(), Items: items}}
	u, err := ToUnstructured(q)
	if err != nil {
		return nil, err
	}
	created, err := m.cfg.Client.Resource(GVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("work queue: create %s/%s: %w", ns, job.Name, err)
	}
	m.cfg.Logger.Info("work queue created", "namespace", ns, "name", job.Name, "source", src.String(), "items", len(items))
	return created, nil
}

func (m *Manager) queue(ns, name string) *queueRef {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := ns + "/" + name
	ref, ok := m.queues[key]
	if !ok {
		ref = &queueRef{}
		m.queues[key] = ref
	}
	return ref
}

// token is the pod's secret: the agent recomputes it after a restart.
func (m *Manager) token(uid types.UID) string {
	h := hmac.New(sha256.New, m.cfg.Key)
	h.Write([]byte(uid))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// serve listens on the pod's IP (once per pod) and returns its URL.
func (m *Manager) serve(pod *corev1.Pod, podIP, queue string) (string, error) {
	token := m.token(pod.UID)
	addr := net.JoinHostPort(podIP, strconv.Itoa(m.cfg.Port))
	url := "http://" + addr + "/queue/" + token
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pods[pod.UID]; ok {
		return url, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("work queue: listen for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	ps := &podServer{pod: Pod{Name: pod.Name, UID: string(pod.UID)}, namespace: pod.Namespace, queue: queue}
	ps.srv = &http.Server{Handler: m.handler(ps, token), ReadHeaderTimeout: 10 * time.Second}
	m.pods[pod.UID] = ps
	go func() { _ = ps.srv.Serve(ln) }()
	return url, nil
}

// PodEnded stops serving a pod that ended or went away and returns its
// leases to the queue. It is idempotent.
func (m *Manager) PodEnded(ctx context.Context, uid types.UID) {
	m.mu.Lock()
	ps, ok := m.pods[uid]
	delete(m.pods, uid)
	m.mu.Unlock()
	if !ok {
		return
	}
	_ = ps.srv.Close()
	m.release(ctx, ps, "ended")
}

// ContainerRestarted returns the leases of a pod whose container was
// restarted in place (restartPolicy OnFailure or Always): the process that
// held them is gone, and the new one starts from scratch.
func (m *Manager) ContainerRestarted(ctx context.Context, uid types.UID) {
	m.mu.Lock()
	ps, ok := m.pods[uid]
	m.mu.Unlock()
	if ok {
		m.release(ctx, ps, "restarted")
	}
}

// release puts back every lease of the pod; why is logged.
func (m *Manager) release(ctx context.Context, ps *podServer, why string) {
	var released int
	err := m.update(ctx, ps.namespace, ps.queue, func(q *WorkQueue) (bool, error) {
		released = q.ReleasePods(func(l Lease) bool { return l.PodUID == ps.pod.UID })
		return released > 0, nil
	})
	if err != nil {
		m.cfg.Logger.Warn("work queue: release a pod's leases", "namespace", ps.namespace, "name", ps.pod.Name, "pod", why, "err", err.Error())
		return
	}
	if released > 0 {
		m.cfg.Logger.Info("work queue: a pod's leases released", "namespace", ps.namespace, "name", ps.pod.Name,
			"queue", ps.queue, "pod", why, "released", released)
	}
}

// Close stops serving every pod (the agent stops); leases stay.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, ps := range m.pods {
		_ = ps.srv.Close()
		delete(m.pods, uid)
	}
}

// errQueueGone: the WorkQueue was deleted (its Job is gone).
var errQueueGone = errors.New("the work queue was deleted")

// update applies mutate to the queue and stores the result, retrying on
// conflicts with a fresh read. mutate returns whether it changed q.
func (m *Manager) update(ctx context.Context, ns, name string, mutate func(*WorkQueue) (bool, error)) error {
	ref := m.queue(ns, name)
	ref.mu.Lock()
	defer ref.mu.Unlock()
	client := m.cfg.Client.Resource(GVR).Namespace(ns)
	for range 10 {
		if ref.stored == nil {
			u, err := client.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return errQueueGone
			}
			if err != nil {
				return fmt.Errorf("get work queue %s/%s: %w", ns, name, err)
			}
			ref.stored = u
		}
		q, err := FromUnstructured(ref.stored.DeepCopy())
		if err != nil {
			return err
		}
		changed, err := mutate(q)
		if err != nil || !changed {
			return err
		}
		u, err := ToUnstructured(q)
		if err != nil {
			return err
		}
		stored, err := client.Update(ctx, u, metav1.UpdateOptions{})
		switch {
		case err == nil:
			ref.stored = stored
			return nil
		case apierrors.IsConflict(err):
			ref.stored = nil
		case apierrors.IsNotFound(err):
			ref.stored = nil
			return errQueueGone
		default:
			return fmt.Errorf("update work queue %s/%s: %w", ns, name, err)
		}
	}
	return fmt.Errorf("update work queue %s/%s: too many conflicts", ns, name)
}

// peek returns the last stored state of a queue, if any.
func (m *Manager) peek(ns, name string) (*WorkQueue, time.Time) {
	ref := m.queue(ns, name)
	ref.mu.Lock()
	defer ref.mu.Unlock()
	if ref.stored == nil {
		return nil, ref.lastSweep
	}
	q, err := FromUnstructured(ref.stored.DeepCopy())
	if err != nil {
		return nil, ref.lastSweep
	}
	return q, ref.lastSweep
}

func (m *Manager) sweptAt(ns, name string, t time.Time) {
	ref := m.queue(ns, name)
	ref.mu.Lock()
	ref.lastSweep = t
	ref.mu.Unlock()
}

// endedHolders returns the UIDs of the pods holding q's leases that have
// ended or gone (on any node, or while no agent ran), so their items go
// back to the queue.
func (m *Manager) endedHolders(ctx context.Context, q *WorkQueue) map[string]bool {
	ended := map[string]bool{}
	checked := map[string]bool{}
	for _, l := range q.Status.Leases {
		if checked[l.PodUID] || m.serving(l.PodUID) {
			continue
		}
		checked[l.PodUID] = true
		pod, err := m.cfg.Kube.CoreV1().Pods(q.Namespace).Get(ctx, l.Pod, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			ended[l.PodUID] = true
		case err != nil:
			continue
		case string(pod.UID) != l.PodUID || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			ended[l.PodUID] = true
		}
	}
	return ended
}

func (m *Manager) serving(uid string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.pods[types.UID(uid)]
	return ok
}

// KeyFrom derives a Manager's key from a secret that lasts across restarts
// (the agent's bearer token); an empty secret gives a nil key (random).
func KeyFrom(secret string) []byte {
	if secret == "" {
		return nil
	}
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte("batchlet.dev/work-queue"))
	return h.Sum(nil)
}
