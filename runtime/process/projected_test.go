package process

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// tokenResolver is fakeResolver that issues numbered tokens and knows the
// API's address.
type tokenResolver struct {
	fakeResolver
	issued chan string
	n      int
}

func (r *tokenResolver) ServiceAccountToken(_ context.Context, pod *corev1.Pod, audience string, secs int64) (string, error) {
	r.n++
	tok := fmt.Sprintf("%s/%s/%s/%d/%d", pod.Namespace, pod.Spec.ServiceAccountName, audience, secs, r.n)
	if r.issued != nil {
		r.issued <- tok
	}
	return tok, nil
}

func (r *tokenResolver) APIServer(context.Context) (string, int32, error) {
	return "10.0.0.5", 6443, nil
}

func tokenPod() *corev1.Pod {
	secs := int64(3607)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team"}, Spec: corev1.PodSpec{ServiceAccountName: "builder",
		Volumes: []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &secs, Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "vault-token"}},
			}}}}}}}
}

func TestProjectedServiceAccountVolume(t *testing.T) {
	res := &tokenResolver{fakeResolver: fakeResolver{cms: map[string]*corev1.ConfigMap{
		"team/kube-root-ca.crt": {Data: map[string]string{"ca.crt": "PEM"}}}}}
	dir := t.TempDir()
	vols, err := materializeVolumes(context.Background(), newFileWriter(), tokenPod(), volumeDirs{disk: dir}, res)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"token": "team/builder//3607/1", "ca.crt": "PEM", "namespace": "team", "vault-token": "team/builder/vault/3600/2",
	}
	for name, content := range want {
		b, err := os.ReadFile(filepath.Join(vols["kube-api-access"], name))
		if err != nil || string(b) != content {
			t.Errorf("%s = %q (%v), want %q", name, b, err, content)
		}
	}
}

func TestProjectedVolumeWithoutRootCAFails(t *testing.T) {
	_, err := materializeVolumes(context.Background(), newFileWriter(), tokenPod(), volumeDirs{disk: t.TempDir()}, &tokenResolver{})
	const want = `MountVolume.SetUp failed for volume "kube-api-access" : configmap "kube-root-ca.crt" not found`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

func TestKubernetesServiceEnv(t *testing.T) {
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST": "10.0.0.5", "KUBERNETES_SERVICE_PORT": "6443", "KUBERNETES_SERVICE_PORT_HTTPS": "6443",
		"KUBERNETES_PORT": "tcp://10.0.0.5:6443", "KUBERNETES_PORT_6443_TCP": "tcp://10.0.0.5:6443",
		"KUBERNETES_PORT_6443_TCP_PROTO": "tcp", "KUBERNETES_PORT_6443_TCP_PORT": "6443", "KUBERNETES_PORT_6443_TCP_ADDR": "10.0.0.5",
	}
	if got := kubernetesServiceEnv(context.Background(), &tokenResolver{}); !reflect.DeepEqual(got, want) {
		t.Errorf("env = %v\nwant %v", got, want)
	}
	if got := kubernetesServiceEnv(context.Background(), fakeResolver{}); got != nil {
		t.Errorf("without a locator env = %v, want none", got)
	}
}

// TestTokenRefreshAt80Percent: the token is replaced once 80% of its
// lifetime has passed, and again 80% of the new one's later.
func TestTokenRefreshAt80Percent(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	res := &tokenResolver{issued: make(chan string, 1)}
	api := tokenPod()
	dir := t.TempDir()
	p := &pod{rt: &Runtime{clock: clk, log: slog.New(slog.DiscardHandler)}, api: api, res: res, done: make(chan struct{})}
	defer close(p.done)
	proj := api.Spec.Volumes[0].Projected.Sources[0].ServiceAccountToken
	go p.refreshToken(proj, nil, dir)
	for i := 1; i <= 2; i++ {
		waitForWaiter(clk)
		clk.Step(3607 * time.Second * 8 / 10)
		tok := <-res.issued
		if want := fmt.Sprintf("team/builder//3607/%d", i); tok != want {
			t.Fatalf("refresh %d issued %q, want %q", i, tok, want)
		}
	}
	waitForWaiter(clk) // the second token is on disk once the loop waits again
	if b, err := os.ReadFile(filepath.Join(dir, "token")); err != nil || string(b) != "team/builder//3607/2" {
		t.Errorf("token file = %q (%v)", b, err)
	}
}

// waitForWaiter yields until the refresher waits on the fake clock.
func waitForWaiter(clk *clocktesting.FakeClock) {
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
}
