package image

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Pull back-off, as the kubelet's image back-off: 10 s doubling to 5 min.
const (
	initialPullBackOff = 10 * time.Second
	maxPullBackOff     = 300 * time.Second
	// pullResync is how soon after a failed pull the container shows
	// ImagePullBackOff (the kubelet's next sync of the pod).
	pullResync = time.Second
	// neverPullResync is how often an image missing under policy Never is
	// looked for again (it may be loaded meanwhile).
	neverPullResync = 10 * time.Second
)

// Reporter shows a container's image progress as the kubelet does.
type Reporter interface {
	// Event records an event on the container.
	Event(eventType, reason, message string)
	// Waiting sets the container's waiting reason and message.
	Waiting(reason, message string)
	// Sleep waits d; false when the pod was stopped meanwhile.
	Sleep(d time.Duration) bool
}

// SecretGetter reads a pod's imagePullSecrets.
type SecretGetter func(ctx context.Context, namespace, name string) (*corev1.Secret, error)

// PullerConfig configures a Puller.
type PullerConfig struct {
	Store *Store
	// Clock times pulls and back-offs; the real clock when nil.
	Clock clock.Clock
	// Mirrors rewrites registries (see Mirrors).
	Mirrors Mirrors
	// DockerConfig is a docker config.json with the node's registry
	// credentials; empty uses $DOCKER_CONFIG or ~/.docker/config.json.
	DockerConfig string
}

// Puller ensures containers' images are present, as the kubelet's image
// manager does: pull policy, pulls one at a time (serializeImagePulls),
// back-off per pod and image, and the statuses and events of each step.
type Puller struct {
	cfg    PullerConfig
	clock  clock.Clock
	nodeKC authn.Keychain
	// serial holds one pull at a time.
	serial chan struct{}

	mu      sync.Mutex
	backoff map[string]*pullBackOff // by pod UID + "_" + image
}

type pullBackOff struct {
	delay   time.Duration
	until   time.Time
	lastErr string
}

// NewPuller returns a Puller over cfg.Store.
func NewPuller(cfg PullerConfig) (*Puller, error) {
	p := &Puller{cfg: cfg, clock: cfg.Clock, nodeKC: authn.DefaultKeychain, serial: make(chan struct{}, 1), backoff: map[string]*pullBackOff{}}
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	if cfg.DockerConfig != "" {
		kc, err := dockerConfigKeychain(cfg.DockerConfig)
		if err != nil {
			return nil, err
		}
		p.nodeKC = kc
	}
	return p, nil
}

// Store is the puller's image store.
func (p *Puller) Store() *Store { return p.cfg.Store }

func dockerConfigKeychain(path string) (authn.Keychain, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("docker config: %w", err)
	}
	return KeychainFromSecrets([]*corev1.Secret{{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: b}}})
}

// PullPolicy is c's imagePullPolicy, defaulted as the API server does:
// Always for ":latest" or no tag, else IfNotPresent.
func PullPolicy(c *corev1.Container) corev1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	ref, err := name.ParseReference(c.Image)
	if err != nil {
		return corev1.PullIfNotPresent
	}
	if _, ok := ref.(name.Digest); ok {
		return corev1.PullIfNotPresent
	}
	if ref.Identifier() == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// Ensure returns the image of container c of pod once it is present,
// pulling it as its policy says and retrying failures with back-off; false
// when the pod was stopped first (r.Sleep said so).
func (p *Puller) Ensure(ctx context.Context, pod *corev1.Pod, c *corev1.Container, secrets SecretGetter, r Reporter) (*Image, bool) {
	for {
		img, retry, err := p.try(ctx, pod, c, secrets, r)
		if err == nil {
			return img, true
		}
		if !r.Sleep(retry) {
			return nil, false
		}
	}
}

// try makes one attempt, reporting its outcome; on failure it says how
// long to wait before the next.
func (p *Puller) try(ctx context.Context, pod *corev1.Pod, c *corev1.Container, secrets SecretGetter, r Reporter) (*Image, time.Duration, error) {
	ref, err := ParseReference(c.Image)
	if err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", c.Image, err)
		r.Event(corev1.EventTypeWarning, "InspectFailed", msg)
		return p.fail(r, "InvalidImageName", msg, neverPullResync)
	}
	img, present, err := p.cfg.Store.Lookup(ref)
	if err != nil {
		msg := fmt.Sprintf("Failed to inspect image %q: %v", c.Image, err)
		r.Event(corev1.EventTypeWarning, "InspectFailed", msg)
		return p.fail(r, "ImageInspectError", msg, neverPullResync)
	}
	policy := PullPolicy(c)
	if policy == corev1.PullNever || (policy == corev1.PullIfNotPresent && present) {
		if present {
			r.Event(corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Container image %q already present on machine", c.Image))
			return img, 0, nil
		}
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		r.Event(corev1.EventTypeWarning, "ErrImageNeverPull", msg)
		return p.fail(r, "ErrImageNeverPull", msg, neverPullResync)
	}
	key := string(pod.UID) + "_" + c.Image
	if wait, msg, inBackOff := p.inBackOff(key, c.Image); inBackOff {
		r.Event(corev1.EventTypeNormal, "BackOff", fmt.Sprintf("Back-off pulling image %q", c.Image))
		return p.fail(r, "ImagePullBackOff", msg, wait)
	}
	kc, err := p.keychain(ctx, pod, secrets, r)
	if err != nil {
		return p.fail(r, "ErrImagePull", err.Error(), pullResync)
	}
	r.Event(corev1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", c.Image))
	img, pulled, waited, err := p.pull(ctx, ref, kc)
	if err != nil {
		r.Event(corev1.EventTypeWarning, "Failed", fmt.Sprintf("Failed to pull image %q: %v", c.Image, err))
		p.recordFailure(key, "ErrImagePull: "+err.Error())
		return p.fail(r, "ErrImagePull", err.Error(), pullResync)
	}
	p.mu.Lock()
	delete(p.backoff, key)
	p.mu.Unlock()
	r.Event(corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.",
		c.Image, pulled.Truncate(time.Millisecond), (pulled+waited).Truncate(time.Millisecond), img.Size))
	return img, 0, nil
}

// fail shows the container waiting with reason and the kubelet's
// "Error: <reason>" event.
func (p *Puller) fail(r Reporter, reason, msg string, retry time.Duration) (*Image, time.Duration, error) {
	r.Waiting(reason, msg)
	r.Event(corev1.EventTypeWarning, "Failed", "Error: "+reason)
	return nil, retry, fmt.Errorf("%s: %s", reason, msg)
}

// pull pulls ref once the pulls before it are done; it returns how long
// the pull took and how long it waited for its turn.
func (p *Puller) pull(ctx context.Context, ref name.Reference, kc authn.Keychain) (*Image, time.Duration, time.Duration, error) {
	queued := p.clock.Now()
	select {
	case p.serial <- struct{}{}:
	case <-ctx.Done():
		return nil, 0, 0, ctx.Err()
	}
	defer func() { <-p.serial }()
	start := p.clock.Now()
	img, err := p.cfg.Store.Pull(ctx, ref, kc, p.cfg.Mirrors)
	if err != nil {
		// containerd's wording, with the registry's own message.
		err = fmt.Errorf("failed to pull and unpack image %q: %w", FullName(ref), err)
	}
	return img, p.clock.Since(start), start.Sub(queued), err
}

// FullName is ref's fully qualified name as containerd writes it
// ("docker.io/library/busybox:1.36").
func FullName(ref name.Reference) string {
	if n, ok := strings.CutPrefix(ref.Name(), name.DefaultRegistry+"/"); ok {
		return "docker.io/" + n
	}
	return ref.Name()
}

// inBackOff reports whether key's last pull failed less than its back-off
// ago, with the time left and the container's waiting message.
func (p *Puller) inBackOff(key, image string) (time.Duration, string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.backoff[key]
	if !ok {
		return 0, "", false
	}
	left := b.until.Sub(p.clock.Now())
	if left <= 0 {
		return 0, "", false
	}
	return left, fmt.Sprintf("Back-off pulling image %q: %s", image, b.lastErr), true
}

func (p *Puller) recordFailure(key, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.backoff[key]
	switch {
	case !ok:
		b = &pullBackOff{delay: initialPullBackOff}
		p.backoff[key] = b
	case b.delay < maxPullBackOff:
		b.delay = min(2*b.delay, maxPullBackOff)
	}
	b.until = p.clock.Now().Add(b.delay)
	b.lastErr = msg
}

// Forget drops the back-off state of a pod's images.
func (p *Puller) Forget(pod *corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.backoff {
		if strings.HasPrefix(k, string(pod.UID)+"_") {
			delete(p.backoff, k)
		}
	}
}

// keychain gives the pod's imagePullSecrets first, then the node's
// credentials. Secrets it cannot read are reported and skipped, as the
// kubelet does.
func (p *Puller) keychain(ctx context.Context, pod *corev1.Pod, get SecretGetter, r Reporter) (authn.Keychain, error) {
	var found []*corev1.Secret
	var missing []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, err := get(ctx, pod.Namespace, ref.Name)
		if err != nil {
			missing = append(missing, ref.Name)
			continue
		}
		found = append(found, s)
	}
	if len(missing) > 0 {
		r.Event(corev1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
			fmt.Sprintf("Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", ")))
	}
	kc, err := KeychainFromSecrets(found)
	if err != nil {
		return nil, err
	}
	return authn.NewMultiKeychain(kc, p.nodeKC), nil
}
