package bench

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	goruntime "runtime"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/batchlet/batchlet/controlplane"
	"github.com/batchlet/batchlet/runtime/process"
)

// busyboxPath is Debian's busybox-static, the bench image's only program.
const busyboxPath = "/bin/busybox"

// runImage times pod creation → container Running, one pod at a time, for
// the process runtime, the image runtime with the image cached, and the
// image runtime pulling (and unpacking) an image not seen before from a
// registry on loopback; all on one server, the runtime chosen per pod.
func runImage(ctx context.Context, r *runner) (Result, error) {
	iterations := r.cfg.Iterations
	if iterations == 0 {
		iterations = 10
	}
	res := Result{Params: map[string]int{"pods per mode": iterations}}
	reg, stopRegistry, err := serveRegistry()
	if err != nil {
		return res, err
	}
	defer stopRegistry()
	cached := reg + "/bench/busybox:cached"
	if err := pushBusybox(cached, "cached"); err != nil {
		return res, err
	}
	cold := make([]string, iterations)
	for i := range cold {
		// A layer of its own each: nothing of it is in the store yet.
		cold[i] = fmt.Sprintf("%s/bench/busybox:cold-%d", reg, i)
		if err := pushBusybox(cold[i], cold[i]); err != nil {
			return res, err
		}
	}
	dir, cleanup, err := r.tempDir("image")
	if err != nil {
		return res, err
	}
	defer cleanup()
	cp, err := controlplane.Start(ctx, controlplane.Options{DataDir: dir, Port: 0, Runtime: "process", Logger: r.cfg.Logger})
	if err != nil {
		return res, fmt.Errorf("start control plane: %w", err)
	}
	defer shutdown(cp)
	kube, err := kubernetes.NewForConfig(cp.ClientConfig())
	if err != nil {
		return res, fmt.Errorf("client: %w", err)
	}
	if err := waitNodeReady(ctx, kube); err != nil {
		return res, err
	}
	// The first image pod pulls the cached image and starts the image
	// runtime's first container; neither is measured.
	if _, err := timeToRunning(ctx, kube, benchImagePod("warm", cached, process.RuntimeImage)); err != nil {
		return res, err
	}
	modes := []struct {
		name, runtime string
		image         func(i int) string
	}{
		{"process", process.RuntimeProcess, func(int) string { return cached }},
		{"image (cached)", process.RuntimeImage, func(int) string { return cached }},
		{"image (cold pull)", process.RuntimeImage, func(i int) string { return cold[i] }},
	}
	medians := map[string]time.Duration{}
	for _, m := range modes {
		var ds []time.Duration
		for i := range iterations {
			pod := benchImagePod(fmt.Sprintf("%s-%d", m.runtime, len(ds)+len(medians)*iterations), m.image(i), m.runtime)
			d, err := timeToRunning(ctx, kube, pod)
			if err != nil {
				return res, fmt.Errorf("%s: %w", m.name, err)
			}
			ds = append(ds, d)
		}
		slices.Sort(ds)
		medians[m.name] = percentile(ds, 50)
		res.addDuration(m.name+": create → Running, median", medians[m.name])
		res.addDuration(m.name+": max", ds[len(ds)-1])
		r.progress("image: %s: median %s", m.name, medians[m.name].Round(time.Millisecond))
	}
	over := medians["image (cached)"] - medians["process"]
	res.addDuration("image (cached) − process, medians", over)
	res.Baseline = "process runtime, same server and run"
	res.Ratio = float64(medians["image (cached)"]) / float64(max(medians["process"], time.Microsecond))
	res.Target, res.Met = "cached image < 50 ms above the process runtime", over < 50*time.Millisecond
	res.Checks = append(res.Checks, fmt.Sprintf("%d pods per mode reached Running", iterations))
	res.Notes = append(res.Notes, "each time includes the agent's 50 ms hold-back of a pod's first non-terminal status (docs/runtimes.md)")
	return res, nil
}

// benchImagePod is a pod whose container sleeps, on the runtime named.
func benchImagePod(name, image, runtimeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "image-" + name, Namespace: "default",
			Annotations: map[string]string{process.RuntimeAnnotation: runtimeName}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "main", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sleep", "3600"}}}},
	}
}

// timeToRunning creates pod, waits (on a watch opened first) until its
// container runs, and deletes it; it returns the time from the create
// call to the status that shows it running.
func timeToRunning(ctx context.Context, kube kubernetes.Interface, pod *corev1.Pod) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	pods := kube.CoreV1().Pods(pod.Namespace)
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String()})
	if err != nil {
		return 0, fmt.Errorf("watch pod %s: %w", pod.Name, err)
	}
	defer w.Stop()
	start := time.Now()
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	defer func() {
		_ = pods.Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}()
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil {
				return time.Since(start), nil
			}
			if t := cs.State.Terminated; t != nil {
				return 0, fmt.Errorf("pod %s: container ended: %s %s", pod.Name, t.Reason, t.Message)
			}
		}
	}
	return 0, fmt.Errorf("pod %s did not run: %w", pod.Name, ctx.Err())
}

// serveRegistry serves an in-memory registry on loopback.
func serveRegistry() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("registry: %w", err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// pushBusybox pushes an image of the host's busybox-static (sh, sleep and
// true) to ref; id, written to /etc/bench-id, makes its layer its own.
func pushBusybox(ref, id string) error {
	bb, err := os.ReadFile(busyboxPath)
	if err != nil {
		return fmt.Errorf("the image scenario needs a static busybox at %s (apt-get install busybox-static): %w", busyboxPath, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, body []byte) {
		h.Size = int64(len(body))
		_ = tw.WriteHeader(h)
		_, _ = tw.Write(body)
	}
	add(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755}, nil)
	add(&tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755}, nil)
	add(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755}, bb)
	for _, applet := range []string{"sh", "sleep", "true"} {
		add(&tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}, nil)
	}
	add(&tar.Header{Name: "etc/bench-id", Typeflag: tar.TypeReg, Mode: 0o644}, []byte(id+"\n"))
	if err := tw.Close(); err != nil {
		return err
	}
	b := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = goruntime.GOARCH, "linux"
	cf.Config = v1.Config{Env: []string{"PATH=/bin"}, Cmd: []string{"sh"}}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	tag, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	if err := remote.Write(tag, img); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	return nil
}
