package process

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/batchlet/batchlet/runtime"
)

// volumeDirs are the directories a pod's volumes are made in.
type volumeDirs struct {
	// disk is the pod's directory, which exists: its volumes go in
	// disk/volumes.
	disk string
	// memory, when set, is the pod's directory in the runtime's MemoryDir
	// (made when needed), for the volumes the kubelet backs with a tmpfs
	// (projected and Secret ones).
	memory string
}

// rootFor is the directory v goes in.
func (d volumeDirs) rootFor(v *corev1.Volume) string {
	if d.memory != "" && (v.Projected != nil || v.Secret != nil) {
		return d.memory
	}
	return filepath.Join(d.disk, "volumes")
}

// materializeVolumes creates one host directory (or uses the host path) per
// pod volume and returns name → host path. The volumes are made with one
// mkdir each and their files written once (see fileWriter), nothing
// stat'ed first.
func materializeVolumes(ctx context.Context, w fileWriter, pod *corev1.Pod, dirs volumeDirs, res runtime.Resolver) (map[string]string, error) {
	out := make(map[string]string, len(pod.Spec.Volumes))
	made := map[string]bool{}
	for i := range pod.Spec.Volumes {
		v := pod.Spec.Volumes[i]
		if v.HostPath != nil {
			path := v.HostPath.Path
			if t := v.HostPath.Type; t != nil && (*t == corev1.HostPathDirectoryOrCreate) {
				if err := os.MkdirAll(path, 0o755); err != nil {
					return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
				}
			}
			out[v.Name] = path
			continue
		}
		root := dirs.rootFor(&v)
		if !made[root] {
			if err := makeDir(root, 0o755); err != nil {
				return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
			}
			made[root] = true
		}
		path := filepath.Join(root, v.Name)
		if err := materializeVolume(ctx, w, pod, v, path, res); err != nil {
			return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
		}
		out[v.Name] = path
	}
	return out, nil
}

// materializeVolume makes the directory of one volume (not a host path)
// at path and writes its files.
func materializeVolume(ctx context.Context, w fileWriter, pod *corev1.Pod, v corev1.Volume, path string, res runtime.Resolver) error {
	switch {
	case v.ConfigMap != nil, v.Secret != nil, v.DownwardAPI != nil, v.Projected != nil:
		if err := makeDir(path, 0o755); err != nil {
			return err
		}
	default: // emptyDir and anything else: an empty per-pod directory
		if err := makeDir(path, 0o777); err != nil {
			return err
		}
		if !w.keepsMode(0o777) {
			_ = os.Chmod(path, 0o777)
		}
		return nil
	}
	switch {
	case v.ConfigMap != nil:
		return writeConfigMap(ctx, w, pod.Namespace, v.ConfigMap, path, res)
	case v.Secret != nil:
		return writeSecret(ctx, w, pod.Namespace, v.Secret, path, res)
	case v.DownwardAPI != nil:
		return writeDownwardAPI(w, pod, v.DownwardAPI, path)
	default:
		return writeProjected(ctx, w, pod, v.Projected, path, res)
	}
}

func writeConfigMap(ctx context.Context, w fileWriter, ns string, src *corev1.ConfigMapVolumeSource, path string, res runtime.Resolver) error {
	cm, err := res.ConfigMap(ctx, ns, src.Name)
	if err != nil {
		if optional(src.Optional) {
			return nil
		}
		return fmt.Errorf("configmap %q not found", src.Name)
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return writeKeys(w, path, data, src.Items, src.DefaultMode)
}

func writeSecret(ctx context.Context, w fileWriter, ns string, src *corev1.SecretVolumeSource, path string, res runtime.Resolver) error {
	s, err := res.Secret(ctx, ns, src.SecretName)
	if err != nil {
		if optional(src.Optional) {
			return nil
		}
		return fmt.Errorf("secret %q not found", src.SecretName)
	}
	data := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		data[k] = v
	}
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return writeKeys(w, path, data, src.Items, src.DefaultMode)
}

func writeDownwardAPI(w fileWriter, pod *corev1.Pod, src *corev1.DownwardAPIVolumeSource, path string) error {
	data := map[string][]byte{}
	var items []corev1.KeyToPath
	for _, it := range src.Items {
		if it.FieldRef == nil {
			continue
		}
		v, err := fieldRefValue(pod, it.FieldRef.FieldPath)
		if err != nil {
			return err
		}
		data[it.Path] = []byte(v)
		items = append(items, corev1.KeyToPath{Key: it.Path, Path: it.Path, Mode: it.Mode})
	}
	return writeKeys(w, path, data, items, src.DefaultMode)
}

// writeKeys writes data (all keys, or only items remapped to their paths)
// into dir, which exists.
func writeKeys(w fileWriter, dir string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32) error {
	mode := os.FileMode(0o644)
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	write := func(rel string, b []byte, m os.FileMode) error {
		if strings.Contains(rel, "..") {
			return fmt.Errorf("invalid path %q", rel)
		}
		p := filepath.Join(dir, rel)
		if strings.ContainsRune(rel, '/') {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
		return w.writeFileMode(p, b, m)
	}
	if len(items) == 0 {
		for k, v := range data {
			if err := write(k, v, mode); err != nil {
				return err
			}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("configmap references non-existent config key: %s", it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		if err := write(it.Path, v, m); err != nil {
			return err
		}
	}
	return nil
}

// hostsFile renders the kubelet-managed /etc/hosts of a pod.
func hostsFile(pod *corev1.Pod, hostname string, extra []runtime.HostEntry) []byte {
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	ip := pod.Status.PodIP
	if ip != "" {
		if sd := pod.Spec.Subdomain; sd != "" {
			fmt.Fprintf(&b, "%s\t%s.%s.%s.svc.cluster.local\t%s\n", ip, hostname, sd, pod.Namespace, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	for _, e := range extra {
		if e.IP == ip {
			continue
		}
		fmt.Fprintf(&b, "%s\t%s\n", e.IP, strings.Join(e.Names, "\t"))
	}
	writeSearchForms(&b, pod, hostname, extra)
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return []byte(b.String())
}

// writeSearchForms adds the short names of the subdomain entries
// (<host>.<subdomain>, .<ns>, .<ns>.svc) that a pod's DNS search path would
// expand: /etc/hosts look-ups do not apply the search path, and batchlet has
// no cluster DNS, so JobSet-style addresses like "js-w-0-0.js" need lines of
// their own. They come after the canonical lines so reverse look-ups still
// give the fully qualified name.
func writeSearchForms(b *strings.Builder, pod *corev1.Pod, hostname string, extra []runtime.HostEntry) {
	if pod.Spec.Subdomain == "" {
		return
	}
	type line struct{ ip, fqdn string }
	var lines []line
	if ip := pod.Status.PodIP; ip != "" {
		lines = append(lines, line{ip, fmt.Sprintf("%s.%s.%s.svc.cluster.local", hostname, pod.Spec.Subdomain, pod.Namespace)})
	}
	for _, e := range extra {
		if e.IP != pod.Status.PodIP && len(e.Names) > 0 {
			lines = append(lines, line{e.IP, e.Names[0]})
		}
	}
	header := false
	for _, l := range lines {
		forms := searchForms(l.fqdn, pod.Namespace)
		if len(forms) == 0 {
			continue
		}
		if !header {
			b.WriteString("\n# Short forms of the names above, as the DNS search path expands them.\n")
			header = true
		}
		fmt.Fprintf(b, "%s\t%s\n", l.ip, strings.Join(forms, "\t"))
	}
}

// searchForms returns h.sd, h.sd.ns and h.sd.ns.svc for the name
// h.sd.ns.svc.cluster.local; nil for other names.
func searchForms(fqdn, ns string) []string {
	base, ok := strings.CutSuffix(fqdn, "."+ns+".svc.cluster.local")
	if !ok || !strings.Contains(base, ".") {
		return nil
	}
	return []string{base, base + "." + ns, base + "." + ns + ".svc"}
}

// podHostname is spec.hostname or the pod name, as the kubelet sets it.
func podHostname(pod *corev1.Pod) string {
	if pod.Spec.Hostname != "" {
		return pod.Spec.Hostname
	}
	if len(pod.Name) > 63 {
		return strings.TrimRight(pod.Name[:63], "-.")
	}
	return pod.Name
}
