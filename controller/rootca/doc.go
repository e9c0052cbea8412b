// Package rootca is the root CA publisher: it keeps a kube-root-ca.crt
// ConfigMap holding the API server's CA bundle in every active namespace,
// recreating it when deleted and restoring it when edited, as
// kube-controller-manager's root-ca-cert-publisher does. Pods use it to
// verify the API server (projected service-account volumes, clients that
// read ca.crt). It sees the cluster only through client-go.
package rootca
