package process

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/batchlet/batchlet/runtime"
	"github.com/batchlet/batchlet/runtime/shim"
)

// defaultPath is the PATH a container gets when it sets none.
const defaultPath = shim.DefaultPath

// envVar is one resolved variable; order matters for $(VAR) expansion.
type envVar struct{ name, value string }

// buildEnv resolves a container's environment as the kubelet does: envFrom
// sources first, then env in order, each value expanded against what was
// defined before it.
func buildEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container, res runtime.Resolver, hostname string) ([]envVar, error) {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	// The kubernetes Service's variables come first: the container's own
	// env overrides them, as on the kubelet.
	svc := kubernetesServiceEnv(ctx, res)
	svcKeys := make([]string, 0, len(svc))
	for k := range svc {
		svcKeys = append(svcKeys, k)
	}
	sort.Strings(svcKeys)
	for _, k := range svcKeys {
		set(k, svc[k])
	}
	for _, from := range c.EnvFrom {
		data, err := envFromData(ctx, pod.Namespace, from, res)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			set(from.Prefix+k, data[k])
		}
	}
	for _, e := range c.Env {
		v, err := envValue(ctx, pod, c, e, vars, res)
		if err != nil {
			return nil, err
		}
		set(e.Name, v)
	}
	out := []envVar{}
	if _, ok := vars["PATH"]; !ok {
		out = append(out, envVar{"PATH", defaultPath})
	}
	if _, ok := vars["HOSTNAME"]; !ok {
		out = append(out, envVar{"HOSTNAME", hostname})
	}
	if _, ok := vars["HOME"]; !ok {
		out = append(out, envVar{"HOME", "/root"})
	}
	for _, k := range order {
		out = append(out, envVar{k, vars[k]})
	}
	return out, nil
}

func envFromData(ctx context.Context, ns string, from corev1.EnvFromSource, res runtime.Resolver) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := res.ConfigMap(ctx, ns, from.ConfigMapRef.Name)
		if err != nil {
			if optional(from.ConfigMapRef.Optional) {
				return nil, nil
			}
			return nil, fmt.Errorf("configmap %q not found", from.ConfigMapRef.Name)
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, err := res.Secret(ctx, ns, from.SecretRef.Name)
		if err != nil {
			if optional(from.SecretRef.Optional) {
				return nil, nil
			}
			return nil, fmt.Errorf("secret %q not found", from.SecretRef.Name)
		}
		out := make(map[string]string, len(s.Data)+len(s.StringData))
		for k, v := range s.Data {
			out[k] = string(v)
		}
		for k, v := range s.StringData {
			out[k] = v
		}
		return out, nil
	}
	return nil, nil
}

func optional(b *bool) bool { return b != nil && *b }

func envValue(ctx context.Context, pod *corev1.Pod, c *corev1.Container, e corev1.EnvVar, defined map[string]string, res runtime.Resolver) (string, error) {
	if e.ValueFrom == nil {
		return expand(e.Value, defined), nil
	}
	vf := e.ValueFrom
	switch {
	case vf.FieldRef != nil:
		return fieldRefValue(pod, vf.FieldRef.FieldPath)
	case vf.ResourceFieldRef != nil:
		return resourceFieldValue(c, vf.ResourceFieldRef)
	case vf.ConfigMapKeyRef != nil:
		r := vf.ConfigMapKeyRef
		cm, err := res.ConfigMap(ctx, pod.Namespace, r.Name)
		if err != nil {
			if optional(r.Optional) {
				return "", nil
			}
			return "", fmt.Errorf("configmap %q not found", r.Name)
		}
		v, ok := cm.Data[r.Key]
		if !ok && !optional(r.Optional) {
			return "", fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", r.Key, pod.Namespace, r.Name)
		}
		return v, nil
	case vf.SecretKeyRef != nil:
		r := vf.SecretKeyRef
		s, err := res.Secret(ctx, pod.Namespace, r.Name)
		if err != nil {
			if optional(r.Optional) {
				return "", nil
			}
			return "", fmt.Errorf("secret %q not found", r.Name)
		}
		v, ok := s.Data[r.Key]
		if !ok && !optional(r.Optional) {
			return "", fmt.Errorf("couldn't find key %s in Secret %s/%s", r.Key, pod.Namespace, r.Name)
		}
		return string(v), nil
	}
	return "", nil
}

// fieldRefValue resolves a downward-API field path.
func fieldRefValue(pod *corev1.Pod, path string) (string, error) {
	if k, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.podIPs":
		return joinIPs(pod.Status.PodIPs), nil
	case "status.hostIPs":
		ips := make([]string, 0, len(pod.Status.HostIPs))
		for _, ip := range pod.Status.HostIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %s", path)
}

func joinIPs(ips []corev1.PodIP) string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.IP)
	}
	return strings.Join(out, ",")
}

// subscript parses `prefix['key']`.
func subscript(path, prefix string) (string, bool) {
	if !strings.HasPrefix(path, prefix+"['") || !strings.HasSuffix(path, "']") {
		return "", false
	}
	return path[len(prefix)+2 : len(path)-2], true
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// resourceFieldValue resolves limits.*/requests.* with the divisor, rounding
// up as the kubelet does. An unset limit reads as 0 here (the kubelet would
// use node allocatable).
func resourceFieldValue(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	var q resource.Quantity
	name := ref.Resource
	switch {
	case strings.HasPrefix(name, "limits."):
		q = c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(name, "limits."))]
	case strings.HasPrefix(name, "requests."):
		q = c.Resources.Requests[corev1.ResourceName(strings.TrimPrefix(name, "requests."))]
	default:
		return "", fmt.Errorf("unsupported container resource: %s", name)
	}
	div := ref.Divisor
	if div.IsZero() {
		div = resource.MustParse("1")
	}
	if strings.HasSuffix(name, ".cpu") {
		v := math.Ceil(float64(q.MilliValue()) / float64(div.MilliValue()))
		return strconv.FormatInt(int64(v), 10), nil
	}
	v := math.Ceil(float64(q.Value()) / float64(div.Value()))
	return strconv.FormatInt(int64(v), 10), nil
}

// expand replaces $(VAR) references with values from vars, as Kubernetes
// does: `$$` is an escaped `$`, unknown references stay as written.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// expandAll expands each string against env.
func expandAll(in []string, env []envVar) []string {
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.name] = e.value
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, vars)
	}
	return out
}

func environ(env []envVar) []string {
	out := make([]string, len(env))
	for i, e := range env {
		out[i] = e.name + "=" + e.value
	}
	return out
}
