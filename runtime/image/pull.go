package image

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
)

// Platform is the platform images are pulled for: this machine's.
var Platform = v1.Platform{OS: "linux", Architecture: goruntime.GOARCH}

// Pull fetches ref from its registry (or the mirror Mirrors names for it)
// with the credentials kc gives, stores it under ref and returns it. A
// multi-platform image gives its manifest for Platform.
func (s *Store) Pull(ctx context.Context, ref name.Reference, kc authn.Keychain, mirrors Mirrors) (*Image, error) {
	from, err := mirrors.rewrite(ref)
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(from, remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithPlatform(Platform))
	if err != nil {
		return nil, err
	}
	return s.put(img, ref.Name())
}

// Mirrors maps a registry host ("docker.io", "registry.k8s.io") to the
// host to pull its images from instead ("127.0.0.1:5000"); the image keeps
// its name.
type Mirrors map[string]string

// ParseMirrors parses "registry=mirror" pairs.
func ParseMirrors(pairs []string) (Mirrors, error) {
	m := Mirrors{}
	for _, p := range pairs {
		from, to, ok := strings.Cut(p, "=")
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("registry mirror %q: want REGISTRY=MIRROR (docker.io=127.0.0.1:5000)", p)
		}
		m[canonicalRegistry(from)] = to
	}
	return m, nil
}

// canonicalRegistry names Docker Hub as go-containerregistry does.
func canonicalRegistry(host string) string {
	switch host {
	case "docker.io", "registry-1.docker.io", "index.docker.io":
		return name.DefaultRegistry
	}
	return host
}

func (m Mirrors) rewrite(ref name.Reference) (name.Reference, error) {
	to, ok := m[ref.Context().RegistryStr()]
	if !ok {
		return ref, nil
	}
	sep := ":"
	if _, isDigest := ref.(name.Digest); isDigest {
		sep = "@"
	}
	mirrored := to + "/" + ref.Context().RepositoryStr() + sep + ref.Identifier()
	out, err := name.ParseReference(mirrored)
	if err != nil {
		return nil, fmt.Errorf("mirror %s of %s: %w", mirrored, ref, err)
	}
	return out, nil
}

// dockerConfigEntry is one registry's credentials in a docker config.
type dockerConfigEntry struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
}

// secretKeychain holds the credentials of a pod's imagePullSecrets, keyed
// as the kubelet's keyring keys them: registry host with an optional path.
type secretKeychain struct {
	entries []secretEntry
}

type secretEntry struct {
	host, path string
	cfg        authn.AuthConfig
}

// KeychainFromSecrets reads the credentials of kubernetes.io/dockerconfigjson
// and kubernetes.io/dockercfg secrets.
func KeychainFromSecrets(secrets []*corev1.Secret) (authn.Keychain, error) {
	kc := &secretKeychain{}
	for _, s := range secrets {
		var auths map[string]dockerConfigEntry
		switch s.Type {
		case corev1.SecretTypeDockerConfigJson:
			var cfg struct {
				Auths map[string]dockerConfigEntry `json:"auths"`
			}
			if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
				return nil, fmt.Errorf("image pull secret %s: %w", s.Name, err)
			}
			auths = cfg.Auths
		case corev1.SecretTypeDockercfg:
			if err := json.Unmarshal(s.Data[corev1.DockerConfigKey], &auths); err != nil {
				return nil, fmt.Errorf("image pull secret %s: %w", s.Name, err)
			}
		default:
			continue
		}
		for key, e := range auths {
			entry, err := newSecretEntry(key, e)
			if err != nil {
				return nil, fmt.Errorf("image pull secret %s: %w", s.Name, err)
			}
			kc.entries = append(kc.entries, entry)
		}
	}
	return kc, nil
}

func newSecretEntry(key string, e dockerConfigEntry) (secretEntry, error) {
	k := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	k = strings.TrimSuffix(strings.TrimSuffix(k, "/"), "/v1")
	host, path, _ := strings.Cut(k, "/")
	cfg := authn.AuthConfig{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken}
	if e.Auth != "" {
		raw, err := base64.StdEncoding.DecodeString(e.Auth)
		if err != nil {
			return secretEntry{}, fmt.Errorf("registry %s: auth is not base64: %w", key, err)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return secretEntry{}, fmt.Errorf("registry %s: auth is not user:password", key)
		}
		cfg.Username, cfg.Password = user, pass
	}
	return secretEntry{host: canonicalRegistry(host), path: path, cfg: cfg}, nil
}

// Resolve implements authn.Keychain: the longest matching entry wins.
func (kc *secretKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	host := canonicalRegistry(target.RegistryStr())
	repo := ""
	if r, ok := target.(name.Repository); ok {
		repo = r.RepositoryStr()
	}
	best, bestLen := -1, -1
	for i, e := range kc.entries {
		if e.host != host || (e.path != "" && repo != e.path && !strings.HasPrefix(repo, e.path+"/")) {
			continue
		}
		if len(e.path) > bestLen {
			best, bestLen = i, len(e.path)
		}
	}
	if best < 0 {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(kc.entries[best].cfg), nil
}
