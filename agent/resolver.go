package agent

import (
	"context"
	"fmt"
	"sort"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batchlet/batchlet/runtime"
)

// resolver serves a runtime's look-ups from the API and the agent's pods.
type resolver struct{ a *Agent }

func (r *resolver) ConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	cm, err := r.a.cfg.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get configmap %s/%s: %w", ns, name, err)
	}
	return cm, nil
}

func (r *resolver) Secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	s, err := r.a.cfg.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get secret %s/%s: %w", ns, name, err)
	}
	return s, nil
}

// ServiceAccountToken asks the TokenRequest API for a token of the pod's
// service account bound to the pod, as the kubelet's token manager does.
func (r *resolver) ServiceAccountToken(ctx context.Context, pod *corev1.Pod, audience string, expirationSeconds int64) (string, error) {
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &expirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if audience != "" {
		tr.Spec.Audiences = []string{audience}
	}
	out, err := r.a.cfg.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, tr, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request token for serviceaccount %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err)
	}
	return out.Status.Token, nil
}

// APIServer is where pods reach the API: the endpoint of the
// default/kubernetes Service (its ClusterIP does not route here).
func (r *resolver) APIServer(ctx context.Context) (string, int32, error) {
	return r.a.apiEndpoint.address(ctx)
}

// Hosts lists the pods sharing the pod's subdomain (on this node and, once
// there are several nodes, on the others), with their
// hostname.subdomain.namespace.svc.cluster.local names.
func (r *resolver) Hosts(pod *corev1.Pod) []runtime.HostEntry {
	if pod.Spec.Subdomain == "" {
		return nil
	}
	out := r.a.remotePeers(pod)
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	for _, st := range r.a.subdomains[pod.Namespace+"/"+pod.Spec.Subdomain] {
		if st.uid == pod.UID || st.terminating || finished(st) {
			continue
		}
		out = append(out, runtime.HostEntry{IP: st.podIP, Names: []string{
			fmt.Sprintf("%s.%s.%s.svc.cluster.local", st.hostname, st.subdomain, st.ns), st.hostname}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Names[1] < out[j].Names[1] })
	return out
}

// hostsRefresher is implemented by runtimes that can rewrite a running
// pod's /etc/hosts.
type hostsRefresher interface {
	RefreshHosts(uid types.UID) error
}

// refreshSubdomain rewrites /etc/hosts of the pods sharing st's subdomain.
func (a *Agent) refreshSubdomain(st *podState) {
	if st.subdomain == "" {
		return
	}
	a.refreshSubdomainKey(st.ns+"/"+st.subdomain, st.uid)
}

// refreshSubdomainKey rewrites /etc/hosts of this node's pods in the
// subdomain key (namespace/subdomain), but the pod except.
func (a *Agent) refreshSubdomainKey(key string, except types.UID) {
	hr, ok := a.cfg.Runtime.(hostsRefresher)
	if !ok {
		return
	}
	a.mu.Lock()
	var uids []types.UID
	for _, o := range a.subdomains[key] {
		if o.uid != except {
			uids = append(uids, o.uid)
		}
	}
	a.mu.Unlock()
	for _, uid := range uids {
		if err := hr.RefreshHosts(uid); err != nil {
			a.log.Debug("refresh hosts", "uid", uid, "err", err.Error())
		}
	}
}
