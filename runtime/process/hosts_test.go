package process

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batchlet/batchlet/runtime"
)

// JobSet pods address each other as <pod hostname>.<subdomain>; with no
// cluster DNS the search-path forms must be in /etc/hosts, after the
// canonical lines.
func TestHostsFileSubdomainSearchForms(t *testing.T) {
	pod := func(subdomain string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "js-w-0-0-abcde", Namespace: "team"},
			Spec:   corev1.PodSpec{Hostname: "js-w-0-0", Subdomain: subdomain},
			Status: corev1.PodStatus{PodIP: "127.1.0.5"}}
	}
	peers := []runtime.HostEntry{{IP: "127.1.0.6", Names: []string{"js-w-1-0.js.team.svc.cluster.local", "js-w-1-0"}}}
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		extra     []runtime.HostEntry
		want      []string
		wantAbsnt []string
	}{
		{
			name:  "subdomain with a peer",
			pod:   pod("js"),
			extra: peers,
			want: []string{
				"127.1.0.5\tjs-w-0-0.js.team.svc.cluster.local\tjs-w-0-0\n",
				"127.1.0.6\tjs-w-1-0.js.team.svc.cluster.local\tjs-w-1-0\n",
				"\n# Short forms of the names above, as the DNS search path expands them.\n" +
					"127.1.0.5\tjs-w-0-0.js\tjs-w-0-0.js.team\tjs-w-0-0.js.team.svc\n" +
					"127.1.0.6\tjs-w-1-0.js\tjs-w-1-0.js.team\tjs-w-1-0.js.team.svc\n",
			},
		},
		{
			name:      "no subdomain",
			pod:       pod(""),
			want:      []string{"127.1.0.5\tjs-w-0-0\n"},
			wantAbsnt: []string{"Short forms"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(hostsFile(tc.pod, "js-w-0-0", tc.extra))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("hosts file lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.wantAbsnt {
				if strings.Contains(got, w) {
					t.Errorf("hosts file has %q:\n%s", w, got)
				}
			}
			canonical := strings.Index(got, "js-w-0-0.js.team.svc.cluster.local")
			if short := strings.Index(got, "\tjs-w-0-0.js\t"); short >= 0 && short < canonical {
				t.Errorf("short form comes before the canonical line:\n%s", got)
			}
		})
	}
}

// A pod's /etc/hosts is a tmpfs file in its MemoryDir directory (made when
// no volume made it), but stays in the pod's directory without a MemoryDir
// and for a container adopted from an agent that kept it there.
func TestHostsPath(t *testing.T) {
	for _, tc := range []struct {
		name        string
		memory      bool
		adopted     bool
		diskHosts   bool
		wantInMemry bool
	}{
		{name: "memory dir", memory: true, wantInMemry: true},
		{name: "no memory dir", memory: false},
		{name: "adopted, hosts on disk", memory: true, adopted: true, diskHosts: true},
		{name: "adopted, hosts in memory", memory: true, adopted: true, wantInMemry: true},
		{name: "new pod beside a stale disk hosts", memory: true, diskHosts: true, wantInMemry: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			rt := &Runtime{cfg: Config{RootDir: filepath.Join(base, "pods")}, files: newFileWriter()}
			if tc.memory {
				rt.cfg.MemoryDir = filepath.Join(base, "memory")
			}
			api := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"},
				Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
				Status: corev1.PodStatus{PodIP: "127.1.0.5"}}
			p := newPod(rt, api, noHosts{})
			if err := os.MkdirAll(p.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			diskPath := filepath.Join(p.dir, "hosts")
			if tc.diskHosts {
				if err := os.WriteFile(diskPath, []byte("old\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.adopted {
				p.ctrs[0].adopt = &adoption{}
			}
			if err := p.writeHosts(); err != nil {
				t.Fatal(err)
			}
			want := diskPath
			if tc.wantInMemry {
				want = filepath.Join(rt.cfg.MemoryDir, "uid-1", "hosts")
			}
			if got := p.hostsPath(); got != want {
				t.Fatalf("hostsPath() = %s, want %s", got, want)
			}
			b, err := os.ReadFile(want)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "127.1.0.5\tp\n") {
				t.Errorf("hosts file:\n%s", b)
			}
		})
	}
}

// noHosts is a Resolver with no extra hosts entries.
type noHosts struct{ runtime.Resolver }

func (noHosts) Hosts(*corev1.Pod) []runtime.HostEntry { return nil }
