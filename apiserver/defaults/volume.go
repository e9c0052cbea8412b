package defaults

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// volume applies SetDefaults_Volume and the per-source defaults.
func volume(v *corev1.Volume) {
	if isEmptySource(&v.VolumeSource) {
		v.VolumeSource.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	src := &v.VolumeSource
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = ptrTo(defaultVolumeMode)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = ptrTo(defaultVolumeMode)
	}
	if src.DownwardAPI != nil {
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = ptrTo(defaultVolumeMode)
		}
		for i := range src.DownwardAPI.Items {
			fieldSelector(src.DownwardAPI.Items[i].FieldRef)
		}
	}
	if src.Projected != nil {
		projected(src.Projected)
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		src.HostPath.Type = ptrTo(corev1.HostPathUnset)
	}
}

func projected(p *corev1.ProjectedVolumeSource) {
	if p.DefaultMode == nil {
		p.DefaultMode = ptrTo(defaultVolumeMode)
	}
	for i := range p.Sources {
		if d := p.Sources[i].DownwardAPI; d != nil {
			for j := range d.Items {
				fieldSelector(d.Items[j].FieldRef)
			}
		}
		if t := p.Sources[i].ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
			t.ExpirationSeconds = ptrTo(int64(3600))
		}
	}
}

func isEmptySource(s *corev1.VolumeSource) bool {
	return *s == corev1.VolumeSource{}
}

// ImagePullPolicyFor returns the pull policy kube-apiserver defaults for an
// image reference: Always when the tag is "latest" or there is neither a tag
// nor a digest, IfNotPresent otherwise (including unparsable references).
func ImagePullPolicyFor(image string) corev1.PullPolicy {
	if imageTag(image) == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// imageTag returns the tag of a docker image reference, "latest" when the
// reference has neither tag nor digest, and "" when it has only a digest or
// cannot be parsed.
func imageTag(image string) string {
	if image == "" || strings.TrimSpace(image) != image {
		return ""
	}
	name, digest, hasDigest := strings.Cut(image, "@")
	if hasDigest && digest == "" {
		return ""
	}
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
		if tag == "" {
			return ""
		}
	}
	if !validRepository(name) {
		return ""
	}
	if tag == "" && !hasDigest {
		return "latest"
	}
	return tag
}

// validRepository is a loose form of the docker reference grammar: the path
// components after an optional registry host must be lower case.
func validRepository(name string) bool {
	if name == "" {
		return false
	}
	parts := strings.Split(name, "/")
	start := 0
	if len(parts) > 1 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost") {
		start = 1
	}
	for _, p := range parts[start:] {
		if p == "" || strings.ToLower(p) != p {
			return false
		}
	}
	return true
}
