package process

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkPodSetUp makes what a pod of the process bench needs on disk
// before its container starts — its directory, /tmp, working directory,
// the ServiceAccount admission's kube-api-access volume (token, ca.crt,
// namespace) and /etc/hosts — with a resolver that answers at once, and
// reports the CPU per set-up. The pod directories are under $TMPDIR.
// With memory=tmpfs the volume goes to a MemoryDir on a tmpfs (/dev/shm
// here), as batchlet server's runtime has it.
func BenchmarkPodSetUp(b *testing.B) {
	b.Run("memory=none", func(b *testing.B) { benchmarkPodSetUp(b, "") })
	b.Run("memory=tmpfs", func(b *testing.B) {
		if !isTmpfs("/dev/shm") {
			b.Skip("no tmpfs at /dev/shm")
		}
		dir, err := os.MkdirTemp("/dev/shm", "bench-memory-")
		if err != nil {
			b.Skip(err)
		}
		defer os.RemoveAll(dir)
		benchmarkPodSetUp(b, dir)
	})
}

func benchmarkPodSetUp(b *testing.B, memoryDir string) {
	r, err := New(Config{RootDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler), MemoryDir: memoryDir})
	if err != nil {
		b.Fatal(err)
	}
	res := volumesResolverForBench()
	vol := tokenPod().Spec.Volumes[0]
	vol.Projected.Sources = vol.Projected.Sources[:3] // token, ca.crt, namespace
	cpu0 := selfCPU()
	b.ResetTimer()
	for i := range b.N {
		api := testPod(fmt.Sprintf("setup-%d", i), corev1.RestartPolicyNever, corev1.Container{Name: "c", Image: "x", Command: []string{"true"}})
		api.Spec.Volumes = []corev1.Volume{vol}
		if err := newPod(r, api, res).setup(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((selfCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/pod")
}

func volumesResolverForBench() *tokenResolver {
	return &tokenResolver{fakeResolver: fakeResolver{cms: map[string]*corev1.ConfigMap{
		"default/kube-root-ca.crt": {Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\nPEM\n-----END CERTIFICATE-----\n"}}}}}
}

// BenchmarkPodChurn sets up a pod and removes the one set up 100 pods
// before it (a Job with parallelism 100 whose finished pods are deleted),
// with and without the spare pod directories (spareDirs), and reports the
// CPU per pod of both. The pod directories are under $TMPDIR.
//
//	go test ./runtime/process -run XXX -bench PodChurn -benchtime 3000x -count 3
func BenchmarkPodChurn(b *testing.B) {
	for _, spares := range []bool{false, true} {
		b.Run(fmt.Sprintf("spares=%v", spares), func(b *testing.B) { benchmarkPodChurn(b, spares) })
	}
}

func benchmarkPodChurn(b *testing.B, spares bool) {
	const live = 100
	r, err := New(Config{RootDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if !spares {
		r.spares = nil
	}
	res := volumesResolverForBench()
	vol := tokenPod().Spec.Volumes[0]
	vol.Projected.Sources = vol.Projected.Sources[:3] // token, ca.crt, namespace
	var pods []*pod
	cpu0 := selfCPU()
	b.ResetTimer()
	for i := range b.N {
		api := testPod(fmt.Sprintf("churn-%d", i), corev1.RestartPolicyNever, corev1.Container{Name: "c", Image: "x", Command: []string{"true"}})
		api.Spec.Volumes = []corev1.Volume{vol}
		p := newPod(r, api, res)
		if err := p.setup(); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p.dir, "c.0.log"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
		if pods = append(pods, p); len(pods) > live {
			pods[0].cleanup()
			pods = pods[1:]
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((selfCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/pod")
	for _, p := range pods {
		p.cleanup()
	}
}
