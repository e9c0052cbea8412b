package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/batchlet/batchlet/runtime"
)

// writeProjected fills a projected volume's directory, which exists, from
// its sources, as the kubelet's projected volume plugin does: ConfigMap,
// Secret and downward API items, and service-account tokens the Resolver
// issues.
func writeProjected(ctx context.Context, w fileWriter, pod *corev1.Pod, src *corev1.ProjectedVolumeSource, path string, res runtime.Resolver) error {
	for _, s := range src.Sources {
		var err error
		switch {
		case s.ConfigMap != nil:
			err = writeConfigMap(ctx, w, pod.Namespace, &corev1.ConfigMapVolumeSource{LocalObjectReference: s.ConfigMap.LocalObjectReference,
				Items: s.ConfigMap.Items, DefaultMode: src.DefaultMode, Optional: s.ConfigMap.Optional}, path, res)
		case s.Secret != nil:
			err = writeSecret(ctx, w, pod.Namespace, &corev1.SecretVolumeSource{SecretName: s.Secret.Name,
				Items: s.Secret.Items, DefaultMode: src.DefaultMode, Optional: s.Secret.Optional}, path, res)
		case s.DownwardAPI != nil:
			err = writeDownwardAPI(w, pod, &corev1.DownwardAPIVolumeSource{Items: s.DownwardAPI.Items, DefaultMode: src.DefaultMode}, path)
		case s.ServiceAccountToken != nil:
			err = writeToken(ctx, w, pod, s.ServiceAccountToken, src.DefaultMode, path, res)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeToken gets a token for the projection and writes it. The first
// token is written in place (no container runs yet to read half of it); a
// refresh, or a set-up that finds a token there (a retried or resumed
// pod), replaces it atomically, so a container never sees half a token.
func writeToken(ctx context.Context, w fileWriter, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection, defaultMode *int32, dir string, res runtime.Resolver) error {
	issuer, ok := res.(runtime.TokenIssuer)
	if !ok {
		return errors.New("no service-account token issuer to request a token from")
	}
	token, err := issuer.ServiceAccountToken(ctx, pod, p.Audience, tokenExpirationSeconds(p))
	if err != nil {
		return fmt.Errorf("failed to fetch token: %w", err)
	}
	mode, uid, gid := tokenFileMode(pod, defaultMode)
	target := filepath.Join(dir, p.Path)
	err = w.createFile(target, []byte(token), mode, uid, gid)
	if !errors.Is(err, fs.ErrExist) {
		if err != nil {
			return fmt.Errorf("write token: %w", err)
		}
		return nil
	}
	tmp := filepath.Join(dir, "."+p.Path+".tmp")
	if err := w.writeFileOwned(tmp, []byte(token), mode, uid, gid); err != nil {
		return fmt.Errorf("write token: %w", err)
	}
	return os.Rename(tmp, target)
}

// tokenFileMode is the mode and owner (-1: unchanged) of a token file: the
// volume's default mode, but as on the kubelet a pod with a user of its
// own or an fsGroup gets its token readable by that user (0600) and group
// (0640) only.
func tokenFileMode(pod *corev1.Pod, defaultMode *int32) (mode os.FileMode, uid, gid int) {
	mode = os.FileMode(0o644)
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	u, g := fsUser(pod), fsGroupOf(pod)
	if u != nil || g != nil {
		mode = 0o600
	}
	if g != nil {
		mode |= 0o040
	}
	return mode, idOr(u), idOr(g)
}

// tokenExpirationSeconds is the projection's lifetime, 1 hour when unset
// (the API default).
func tokenExpirationSeconds(p *corev1.ServiceAccountTokenProjection) int64 {
	if p.ExpirationSeconds != nil {
		return *p.ExpirationSeconds
	}
	return 3600
}

// tokenRefreshAfter is when the kubelet replaces a token: after 80% of its
// lifetime.
func tokenRefreshAfter(p *corev1.ServiceAccountTokenProjection) time.Duration {
	return time.Duration(tokenExpirationSeconds(p)) * time.Second * 8 / 10
}

// refreshTokens rewrites the pod's projected service-account tokens each
// time 80% of their lifetime has passed, until the pod is done.
func (p *pod) refreshTokens() {
	for _, v := range p.api.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken == nil {
				continue
			}
			go p.refreshToken(s.ServiceAccountToken, v.Projected.DefaultMode, p.volumes[v.Name])
		}
	}
}

func (p *pod) refreshToken(proj *corev1.ServiceAccountTokenProjection, mode *int32, dir string) {
	wait := tokenRefreshAfter(proj)
	for {
		select {
		case <-p.done:
			return
		case <-p.rt.clock.After(wait):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := writeToken(ctx, p.rt.files, p.api, proj, mode, dir, p.tokenResolver())
		cancel()
		wait = tokenRefreshAfter(proj)
		if err != nil {
			// The old token is still valid for a fifth of its life: retry soon.
			p.rt.log.Info("refresh service-account token", "namespace", p.api.Namespace, "name", p.api.Name, "err", err.Error())
			wait = 10 * time.Second
		}
	}
}

// kubernetesServiceEnv are the variables the kubelet sets for the
// default/kubernetes Service in every container, naming where this
// runtime's pods reach the API: its endpoint, since Service ClusterIPs do
// not route on this host.
func kubernetesServiceEnv(ctx context.Context, res runtime.Resolver) map[string]string {
	loc, ok := res.(runtime.APIServerLocator)
	if !ok {
		return nil
	}
	host, port, err := loc.APIServer(ctx)
	if err != nil || host == "" {
		return nil
	}
	p := strconv.Itoa(int(port))
	url := "tcp://" + net.JoinHostPort(host, p)
	prefix := "KUBERNETES_PORT_" + p + "_TCP"
	return map[string]string{
		"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": p, "KUBERNETES_SERVICE_PORT_HTTPS": p,
		"KUBERNETES_PORT": url, prefix: url, prefix + "_PROTO": "tcp", prefix + "_PORT": p, prefix + "_ADDR": host,
	}
}
