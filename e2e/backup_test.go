package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writer creates ConfigMaps one after another until stopped and remembers
// the value of each one the server acknowledged.
type writer struct {
	mu    sync.Mutex
	acked map[string]string
	stop  chan struct{}
	done  chan struct{}
}

func startWriter(t *testing.T, s *server, prefix string) *writer {
	w := &writer{acked: map[string]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	cs := s.clientset(t)
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			name := fmt.Sprintf("%s-%05d", prefix, i)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": fmt.Sprint(i)}}
			if _, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
				t.Errorf("create %s: %v", name, err)
				return
			}
			w.mu.Lock()
			w.acked[name] = fmt.Sprint(i)
			w.mu.Unlock()
		}
	}()
	return w
}

// ackedSoFar copies what the server has acknowledged until now.
func (w *writer) ackedSoFar() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.acked))
	for k, v := range w.acked {
		out[k] = v
	}
	return out
}

func (w *writer) halt() {
	close(w.stop)
	<-w.done
}

// TestBackupWhileServingRestores: `batchlet backup` of a server that keeps
// taking writes, restored into a fresh data dir, starts a server that has
// every object acknowledged before the backup started, and the restored
// credentials (the old token) still work.
func TestBackupWhileServingRestores(t *testing.T) {
	s := startServer(t)
	s.applyYAML(configMapsYAML(50))
	w := startWriter(t, s, "during")
	eventually(t, 60*time.Second, "writes acknowledged", func() bool { return len(w.ackedSoFar()) >= 20 })
	before := w.ackedSoFar()
	for i := range 50 {
		before[fmt.Sprintf("cm-%03d", i)] = fmt.Sprint(i)
	}
	archive := filepath.Join(t.TempDir(), "backup.tar.gz")
	out, err := exec.Command(binary, "backup", "--data-dir", s.dataDir, "--out", archive).CombinedOutput()
	if err != nil {
		t.Fatalf("batchlet backup: %v\n%s", err, out)
	}
	w.halt()
	t.Logf("%s; %d writes acknowledged before it, %d by the end", strings.TrimSpace(string(out)), len(before), len(w.ackedSoFar()))
	oldToken, _ := os.ReadFile(filepath.Join(s.dataDir, "token"))
	// The original is gone (and its port with it) before the restore starts.
	s.stop()

	restored := &server{t: t, dataDir: t.TempDir(), port: freePort(t)}
	restored.kubeconfig = filepath.Join(restored.dataDir, "kubeconfig")
	if out, err := exec.Command("tar", "-xzf", archive, "-C", restored.dataDir).CombinedOutput(); err != nil {
		t.Fatalf("tar -xzf: %v\n%s", err, out)
	}
	restored.start()
	t.Cleanup(restored.stop)
	got := map[string]string{}
	list := restored.kubectl("get", "configmaps", "-o", `jsonpath={range .items[*]}{.metadata.name}={.data.i}{"\n"}{end}`)
	for _, l := range strings.Fields(list) {
		name, v, _ := strings.Cut(l, "=")
		got[name] = v
	}
	missing := 0
	for name, v := range before {
		if got[name] != v {
			missing++
			t.Errorf("%s: %q after the restore, want %q (acknowledged before the backup)", name, got[name], v)
		}
	}
	if missing == 0 {
		t.Logf("all %d objects acknowledged before the backup restored (%d ConfigMaps in the restore)", len(before), len(got))
	}
	if token, _ := os.ReadFile(filepath.Join(restored.dataDir, "token")); string(token) != string(oldToken) {
		t.Errorf("the restored data dir has another admin token")
	}
}
