package pki

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ContextName is the kubeconfig context (and cluster and user) batchlet writes.
const ContextName = "batchlet"

// Kubeconfig renders a kubeconfig for server (https://host:port) that trusts
// the bundle's CA and authenticates with its admin token.
func Kubeconfig(server string, b *Bundle) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ContextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: b.CAPEM}
	cfg.AuthInfos[ContextName] = &clientcmdapi.AuthInfo{Token: b.Token}
	cfg.Contexts[ContextName] = &clientcmdapi.Context{Cluster: ContextName, AuthInfo: ContextName, Namespace: "default"}
	cfg.CurrentContext = ContextName
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("render kubeconfig: %w", err)
	}
	return out, nil
}

// RESTConfig is the client-go config equivalent of Kubeconfig.
func RESTConfig(server string, b *Bundle) *rest.Config {
	return &rest.Config{
		Host:            server,
		BearerToken:     b.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: b.CAPEM},
	}
}
