package process

import (
	"fmt"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkPodSetUp makes what a pod of the process bench needs on disk
// before its container starts — its directory, /tmp, working directory,
// the ServiceAccount admission's kube-api-access volume (token, ca.crt,
// namespace) and /etc/hosts — with a resolver that answers at once, and
// reports the CPU per set-up. The pod directories are under $TMPDIR.
func BenchmarkPodSetUp(b *testing.B) {
	r, err := New(Config{RootDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)})
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
