package process

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/batchlet/batchlet/runtime/image"
)

func TestVerifyRunAsNonRoot(t *testing.T) {
	const prefix = `(pod: "p-nr_default(nr)", container: main)`
	noImage := "host command"
	cases := []struct {
		name string
		pod  *corev1.PodSecurityContext
		ctr  *corev1.SecurityContext
		// image is the image config's User; noImage for a host command.
		image  string
		wantOK bool
		want   string
	}{
		{name: "nothing asked: root allowed", image: noImage, wantOK: true},
		{name: "pod runAsNonRoot, no user", image: noImage, pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			want: "container has runAsNonRoot and image will run as root " + prefix},
		{name: "pod runAsNonRoot, user 0", image: noImage, pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)},
			want: "container's runAsUser breaks non-root policy " + prefix},
		{name: "pod runAsNonRoot, container user 1000", image: noImage, pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			ctr: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)}, wantOK: true},
		{name: "container turns it off", image: noImage, pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			ctr: &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}, wantOK: true},
		{name: "container runAsNonRoot, pod user 5", image: noImage, pod: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](5)},
			ctr: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}, wantOK: true},
		{name: "image without user", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			want: "container has runAsNonRoot and image will run as root " + prefix},
		{name: "image user 0:0", image: "0:0", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			want: "container has runAsNonRoot and image will run as root " + prefix},
		{name: "numeric image user", image: "1000", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, wantOK: true},
		{name: "numeric image user with a group name", image: "65534:nogroup", ctr: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}, wantOK: true},
		{name: "named image user", image: "nobody", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			want: "container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root " + prefix},
		{name: "named image user and group", image: "app:app", ctr: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)},
			want: "container has runAsNonRoot and image has non-numeric user (app), cannot verify user is non-root " + prefix},
		{name: "named image user, runAsUser given", image: "nobody", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65534)},
			wantOK: true},
		{name: "named image user, runAsUser 0", image: "nobody", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			ctr:  &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)},
			want: "container's runAsUser breaks non-root policy " + prefix},
		{name: "image user out of range", image: "4294967296", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			want: "container has runAsNonRoot and image has an invalid user id (4294967296). (Must be 1-(2147483647)): must be between 0 and 2147483647, inclusive " + prefix},
		{name: "named image user, no runAsNonRoot", image: "nobody", wantOK: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := shC("main", "true")
			c.SecurityContext = tc.ctr
			api := testPod("nr", corev1.RestartPolicyNever, c)
			api.Spec.SecurityContext = tc.pod
			p := &pod{api: api}
			var img *containerImage
			if tc.image != noImage {
				img = &containerImage{img: &image.Image{Config: &v1.ConfigFile{Config: v1.Config{User: tc.image}}}}
			}
			err := p.verifyRunAsNonRoot(&ctr{spec: &api.Spec.Containers[0]}, img)
			switch {
			case tc.wantOK && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.wantOK && (err == nil || err.Error() != tc.want):
				t.Errorf("err = %v, want %s", err, tc.want)
			}
		})
	}
}

func TestFSUser(t *testing.T) {
	withUser := func(u *int64) corev1.Container {
		c := shC("c", "true")
		if u != nil {
			c.SecurityContext = &corev1.SecurityContext{RunAsUser: u}
		}
		return c
	}
	cases := []struct {
		name string
		pod  *int64
		ctrs []corev1.Container
		want *int64
	}{
		{name: "none", ctrs: []corev1.Container{withUser(nil)}},
		{name: "pod's", pod: ptr.To[int64](7), ctrs: []corev1.Container{withUser(nil), withUser(nil)}, want: ptr.To[int64](7)},
		{name: "all the same", ctrs: []corev1.Container{withUser(ptr.To[int64](9)), withUser(ptr.To[int64](9))}, want: ptr.To[int64](9)},
		{name: "different", pod: ptr.To[int64](7), ctrs: []corev1.Container{withUser(nil), withUser(ptr.To[int64](9))}},
		{name: "one unset", ctrs: []corev1.Container{withUser(nil), withUser(ptr.To[int64](9))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := testPod("fu", corev1.RestartPolicyNever, tc.ctrs...)
			if tc.pod != nil {
				api.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: tc.pod}
			}
			got := fsUser(api)
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("fsUser = %v, want %v", ptr.Deref(got, -1), ptr.Deref(tc.want, -1))
			}
		})
	}
}

// fsGroup ownership as the kubelet's SetVolumeOwnership: group, group
// read (and write for writable volumes), setgid and execute on
// directories.
func TestSetVolumeOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	for _, tc := range []struct {
		readOnly          bool
		wantDir, wantFile os.FileMode
	}{
		{readOnly: false, wantDir: os.ModeDir | os.ModeSetgid | 0o770, wantFile: 0o660},
		{readOnly: true, wantDir: os.ModeDir | os.ModeSetgid | 0o750, wantFile: 0o640},
	} {
		dir := t.TempDir()
		sub := filepath.Join(dir, "sub")
		if err := os.Mkdir(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(sub, "f")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := setVolumeOwnership(sub, 2000, tc.readOnly); err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]os.FileMode{sub: tc.wantDir, file: tc.wantFile} {
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			gid := st.Sys().(*syscall.Stat_t).Gid
			if st.Mode() != want || gid != 2000 {
				t.Errorf("readOnly=%v %s: mode %v gid %d, want %v gid 2000", tc.readOnly, filepath.Base(path), st.Mode(), gid, want)
			}
		}
	}
}
