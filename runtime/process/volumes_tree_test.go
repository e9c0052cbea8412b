package process

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// volumesPod has one volume of each kind the process runtime writes, with
// default and per-item modes and a nested item path.
func volumesPod(psc *corev1.PodSecurityContext) *corev1.Pod {
	p := tokenPod()
	p.Spec.SecurityContext = psc
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
	p.Spec.Volumes = append(p.Spec.Volumes,
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr.To[int32](0o600),
			Items: []corev1.KeyToPath{{Key: "a", Path: "sub/dir/a"}, {Key: "b", Path: "b", Mode: ptr.To[int32](0o400)}}}}},
		corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}}},
		corev1.Volume{Name: "opt", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "missing", Optional: ptr.To(true)}}},
		corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			DefaultMode: ptr.To[int32](0o666), Items: []corev1.DownwardAPIVolumeFile{{Path: "name",
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
	)
	return p
}

func volumesResolver() *tokenResolver {
	return &tokenResolver{fakeResolver: fakeResolver{
		cms: map[string]*corev1.ConfigMap{
			"team/kube-root-ca.crt": {Data: map[string]string{"ca.crt": "PEM"}},
			"team/cfg":              {Data: map[string]string{"a": "A", "b": "B", "unused": "U"}},
		},
		secrets: map[string]*corev1.Secret{"team/sec": {Data: map[string][]byte{"user": []byte("u"), "pass": []byte("p")}}},
	}}
}

// volumeTree lists every entry under dir as "path mode uid:gid content".
func volumeTree(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		st := info.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("%s %v %d:%d", rel, info.Mode(), st.Uid, st.Gid)
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			line += " " + strings.ReplaceAll(string(b), "/", "|")
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestVolumeTree pins the files, modes and owners a pod's volumes get,
// on the first set-up and on a retried one (files already there), with
// the umask of the test process.
func TestVolumeTree(t *testing.T) {
	withUmask(t, 0o022)
	base := `. drwxr-xr-x 0:0
volumes drwxr-xr-x 0:0
volumes/cfg drwxr-xr-x 0:0
volumes/cfg/b -r-------- 0:0 B
volumes/cfg/sub drwxr-xr-x 0:0
volumes/cfg/sub/dir drwxr-xr-x 0:0
volumes/cfg/sub/dir/a -rw------- 0:0 A
volumes/info drwxr-xr-x 0:0
volumes/info/name -rw-rw-rw- 0:0 p
volumes/kube-api-access drwxr-xr-x 0:0
volumes/kube-api-access/ca.crt -rw-r--r-- 0:0 PEM
volumes/kube-api-access/namespace -rw-r--r-- 0:0 team
volumes/kube-api-access/token -rw-r--r-- 0:0 team|builder||3607|%d
volumes/kube-api-access/vault-token -rw-r--r-- 0:0 team|builder|vault|3600|%d
volumes/opt drwxr-xr-x 0:0
volumes/scratch drwxrwxrwx 0:0
volumes/sec drwxr-xr-x 0:0
volumes/sec/pass -rw-r--r-- 0:0 p
volumes/sec/user -rw-r--r-- 0:0 u`
	runAsUser := `. drwxr-xr-x 0:0
volumes drwxr-xr-x 0:0
volumes/cfg drwxr-xr-x 0:0
volumes/cfg/b -r-------- 0:0 B
volumes/cfg/sub drwxr-xr-x 0:0
volumes/cfg/sub/dir drwxr-xr-x 0:0
volumes/cfg/sub/dir/a -rw------- 0:0 A
volumes/info drwxr-xr-x 0:0
volumes/info/name -rw-rw-rw- 0:0 p
volumes/kube-api-access drwxr-xr-x 0:0
volumes/kube-api-access/ca.crt -rw-r--r-- 0:0 PEM
volumes/kube-api-access/namespace -rw-r--r-- 0:0 team
volumes/kube-api-access/token -rw------- 1000:0 team|builder||3607|%d
volumes/kube-api-access/vault-token -rw------- 1000:0 team|builder|vault|3600|%d
volumes/opt drwxr-xr-x 0:0
volumes/scratch drwxrwxrwx 0:0
volumes/sec drwxr-xr-x 0:0
volumes/sec/pass -rw-r--r-- 0:0 p
volumes/sec/user -rw-r--r-- 0:0 u`
	fsGroup := `. drwxr-xr-x 0:0
volumes drwxr-xr-x 0:0
volumes/cfg dgrwxr-xr-x 0:2000
volumes/cfg/b -r--r----- 0:2000 B
volumes/cfg/sub dgrwxr-xr-x 0:2000
volumes/cfg/sub/dir dgrwxr-xr-x 0:2000
volumes/cfg/sub/dir/a -rw-r----- 0:2000 A
volumes/info dgrwxr-xr-x 0:2000
volumes/info/name -rw-rw-rw- 0:2000 p
volumes/kube-api-access dgrwxr-xr-x 0:2000
volumes/kube-api-access/ca.crt -rw-r--r-- 0:2000 PEM
volumes/kube-api-access/namespace -rw-r--r-- 0:2000 team
volumes/kube-api-access/token -rw-r----- 1000:2000 team|builder||3607|%d
volumes/kube-api-access/vault-token -rw-r----- 1000:2000 team|builder|vault|3600|%d
volumes/opt dgrwxr-xr-x 0:2000
volumes/scratch dgrwxrwxrwx 0:2000
volumes/sec dgrwxr-xr-x 0:2000
volumes/sec/pass -rw-r--r-- 0:2000 p
volumes/sec/user -rw-r--r-- 0:2000 u`
	for _, tc := range []struct {
		name string
		psc  *corev1.PodSecurityContext
		want string
	}{
		{"no ids", nil, base},
		{"runAsUser", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}, runAsUser},
		{"fsGroup", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}, fsGroup},
	} {
		// With the umask unknown every file is chmodded: the tree is the same.
		for _, w := range []fileWriter{newFileWriter(), {}} {
			t.Run(fmt.Sprintf("%s umaskKnown=%v", tc.name, w.umaskKnown), func(t *testing.T) {
				if os.Geteuid() != 0 {
					t.Skip("the tree is pinned for root, who may chown")
				}
				dir := filepath.Join(t.TempDir(), "pod")
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				rt := &Runtime{files: w, clock: clocktesting.NewFakeClock(time.Unix(0, 0))}
				p := &pod{rt: rt, api: volumesPod(tc.psc), res: volumesResolver(), dir: dir}
				for attempt := 1; attempt <= 2; attempt++ {
					if err := p.setupVolumes(context.Background()); err != nil {
						t.Fatal(err)
					}
					// The retry reuses the pod's tokens (tokenCache).
					want := fmt.Sprintf(tc.want, 1, 2)
					if got := volumeTree(t, dir); got != want {
						t.Errorf("set-up %d: tree\n%s\nwant\n%s", attempt, got, want)
					}
				}
			})
		}
	}
}

// TestVolumeTreeWithMemoryDir: with a MemoryDir, the projected and Secret
// volumes (those the kubelet backs with a tmpfs) are made there, the
// others in the pod's directory, with the same modes; the pod's clean-up
// removes both, and containers do not see the MemoryDir.
func TestVolumeTreeWithMemoryDir(t *testing.T) {
	withUmask(t, 0o022)
	disk := `. drwxr-xr-x 0:0
volumes drwxr-xr-x 0:0
volumes/cfg drwxr-xr-x 0:0
volumes/cfg/b -r-------- 0:0 B
volumes/cfg/sub drwxr-xr-x 0:0
volumes/cfg/sub/dir drwxr-xr-x 0:0
volumes/cfg/sub/dir/a -rw------- 0:0 A
volumes/info drwxr-xr-x 0:0
volumes/info/name -rw-rw-rw- 0:0 p
volumes/scratch drwxrwxrwx 0:0`
	memory := `. drwxr-xr-x 0:0
kube-api-access drwxr-xr-x 0:0
kube-api-access/ca.crt -rw-r--r-- 0:0 PEM
kube-api-access/namespace -rw-r--r-- 0:0 team
kube-api-access/token -rw-r--r-- 0:0 team|builder||3607|1
kube-api-access/vault-token -rw-r--r-- 0:0 team|builder|vault|3600|2
opt drwxr-xr-x 0:0
sec drwxr-xr-x 0:0
sec/pass -rw-r--r-- 0:0 p
sec/user -rw-r--r-- 0:0 u`
	if os.Geteuid() != 0 {
		t.Skip("the tree is pinned for root, who may chown")
	}
	root := t.TempDir()
	rt := &Runtime{cfg: Config{RootDir: filepath.Join(root, "pods"), MemoryDir: filepath.Join(root, "shm")}, files: newFileWriter(),
		clock: clocktesting.NewFakeClock(time.Unix(0, 0))}
	api := volumesPod(nil)
	p := &pod{rt: rt, api: api, res: volumesResolver(), dir: rt.podDir(api.UID)}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.setupVolumes(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := volumeTree(t, p.dir); got != disk {
		t.Errorf("pod dir tree\n%s\nwant\n%s", got, disk)
	}
	if got := volumeTree(t, rt.podMemoryDir(api.UID)); got != memory {
		t.Errorf("memory dir tree\n%s\nwant\n%s", got, memory)
	}
	if hidden := rt.hiddenPaths(); !slices.Contains(hidden, rt.cfg.MemoryDir) {
		t.Errorf("hidden paths %v lack the memory dir", hidden)
	}
	p.cleanup()
	for _, dir := range []string{p.dir, rt.podMemoryDir(api.UID)} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s after clean-up: %v", dir, err)
		}
	}
}

// A container adopted from an agent that made its pod's volumes in the
// pod's directory keeps them there: its bind mounts, and the tokens
// refreshed for it, are there.
func TestAdoptedPodKeepsVolumesOnDisk(t *testing.T) {
	root := t.TempDir()
	rt := &Runtime{cfg: Config{RootDir: filepath.Join(root, "pods"), MemoryDir: filepath.Join(root, "shm")}}
	api := volumesPod(nil)
	for _, tc := range []struct {
		name     string
		adopted  bool
		oldDisk  bool
		inMemory bool
	}{
		{"new pod", false, false, true},
		{"restarted pod with an old layout", false, true, true},
		{"adopted pod of the old layout", true, true, false},
		{"adopted pod of the new layout", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod(rt, api, nil)
			if tc.adopted {
				p.ctrs[0].adopt = &adoption{}
			}
			_ = os.RemoveAll(p.dir)
			if tc.oldDisk {
				if err := os.MkdirAll(filepath.Join(p.dir, "volumes"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if got := p.volumeDirs().memory != ""; got != tc.inMemory {
				t.Errorf("in memory = %v, want %v", got, tc.inMemory)
			}
		})
	}
}

// withUmask sets the process's umask for the test.
func withUmask(t *testing.T, mask int) {
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// TestPodTmpIsSticky: a pod's private /tmp is world-writable with the
// sticky bit, as a host's /tmp, whatever the umask.
func TestPodTmpIsSticky(t *testing.T) {
	for _, w := range []fileWriter{newFileWriter(), {}} {
		t.Run(fmt.Sprintf("umaskKnown=%v", w.umaskKnown), func(t *testing.T) {
			withUmask(t, 0o022)
			dir := filepath.Join(t.TempDir(), "pod")
			p := &pod{rt: &Runtime{files: w, namespaces: true}, api: &corev1.Pod{}, res: volumesResolver(), dir: dir}
			if err := p.setup(); err != nil {
				t.Fatal(err)
			}
			info, err := os.Stat(filepath.Join(dir, "tmp"))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := info.Mode(), os.ModeDir|podTmpMode; got != want {
				t.Errorf("pod tmp mode = %v, want %v", got, want)
			}
		})
	}
}
