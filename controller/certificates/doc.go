// Package certificates approves and signs the CertificateSigningRequests
// of nodes with the cluster CA, as kube-controller-manager's csrapproving
// and csrsigning controllers do for the kubelet: a joining agent asks for
// its client certificate (signer kubernetes.io/kube-apiserver-client-kubelet)
// with its bootstrap token, and for its serving certificate (signer
// kubernetes.io/kubelet-serving) with its node identity. It runs only
// where the CA key is at hand (batchlet server); on a real cluster
// kube-controller-manager does this.
package certificates
