package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/batchlet/batchlet/apiserver/admission"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/apiserver/satoken"
)

func newSATestEnv(t *testing.T) *testEnv {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := satoken.NewIssuer(key, "", clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	return newTestEnvWith(t, func(c *Config) { c.ServiceAccountIssuer = issuer })
}

// clientWithToken is a client of env authenticating with token.
func clientWithToken(t *testing.T, env *testEnv, token string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(env.cfg)
	cfg.BearerToken = token
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTokenRequestValidation(t *testing.T) {
	env := newSATestEnv(t)
	pod := testPod("other-sa", "")
	pod.Spec.ServiceAccountName = "builder"
	if _, err := env.client.CoreV1().ServiceAccounts("default").Create(env.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.client.CoreV1().Pods("default").Create(env.ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		sa   string
		spec authenticationv1.TokenRequestSpec
		want string
	}{
		{"too short", "default", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(60))},
			`TokenRequest.authentication.k8s.io "default" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes`},
		{"unknown service account", "nobody", authenticationv1.TokenRequestSpec{}, `serviceaccounts "nobody" not found`},
		{"bound to a secret", "default", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "s"}},
			"cannot bind token to object of type /v1, Kind=Secret"},
		{"pod of another service account", "default", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "other-sa"}},
			`cannot bind token for serviceaccount "default" to pod running with different serviceaccount name.`},
		{"stale pod UID", "builder", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "other-sa", UID: "old"}},
			`Operation cannot be fulfilled on Pod "other-sa": the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.client.CoreV1().ServiceAccounts("default").CreateToken(env.ctx, tc.sa, &authenticationv1.TokenRequest{Spec: tc.spec}, metav1.CreateOptions{})
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestServiceAccountTokenAuthenticates(t *testing.T) {
	env := newSATestEnv(t)
	sa, err := env.client.CoreV1().ServiceAccounts("default").Get(env.ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := env.client.CoreV1().Pods("default").Create(env.ctx, testPod("p", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := env.client.CoreV1().ServiceAccounts("default").CreateToken(env.ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	if got := tr.Status.ExpirationTimestamp.Sub(tr.CreationTimestamp.Time).Seconds(); got < 3599 || got > 3601 {
		t.Errorf("token lives %vs, want the default 3600", got)
	}
	review, err := clientWithToken(t, env, tr.Status.Token).AuthenticationV1().SelfSubjectReviews().Create(env.ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview with the token: %v", err)
	}
	got := review.Status.UserInfo
	delete(got.Extra, "authentication.kubernetes.io/credential-id")
	want := authenticationv1.UserInfo{Username: "system:serviceaccount:default:default", UID: string(sa.UID),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"},
		Extra:  map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"p"}, "authentication.kubernetes.io/pod-uid": {string(pod.UID)}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("user = %+v\nwant %+v", got, want)
	}

	// A bound token dies with its pod.
	if err := env.client.CoreV1().Pods("default").Delete(env.ctx, "p", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := clientWithToken(t, env, tr.Status.Token).AuthenticationV1().SelfSubjectReviews().Create(env.ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}); err == nil || err.Error() != "Unauthorized" {
		t.Errorf("token of a deleted pod: err = %v, want Unauthorized", err)
	}
}

func TestPodAdmissionMountsTheServiceAccountToken(t *testing.T) {
	env := newSATestEnv(t)
	no := false
	if _, err := env.client.CoreV1().ServiceAccounts("default").Create(env.ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, AutomountServiceAccountToken: &no}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		sa        string
		automount *bool
		wantMount bool
		wantErr   string
	}{
		{name: "default service account", wantMount: true},
		{name: "pod opts out", automount: &no},
		{name: "service account opts out", sa: "quiet"},
		{name: "missing service account", sa: "ghost",
			wantErr: `pods "pod" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("pod", "")
			if i < len(cases)-1 {
				pod.Name = pod.Name + string(rune('a'+i))
			}
			pod.Spec.ServiceAccountName, pod.Spec.AutomountServiceAccountToken = tc.sa, tc.automount
			pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
			got, err := env.client.CoreV1().Pods("default").Create(env.ctx, pod, metav1.CreateOptions{})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.ServiceAccountName == "" {
				t.Error("serviceAccountName not defaulted")
			}
			mounted := len(got.Spec.Volumes) == 1 && got.Spec.Volumes[0].Projected != nil
			if mounted != tc.wantMount {
				t.Fatalf("volumes = %+v, want token volume %v", got.Spec.Volumes, tc.wantMount)
			}
			if !mounted {
				return
			}
			srcs := got.Spec.Volumes[0].Projected.Sources
			if len(srcs) != 3 || *srcs[0].ServiceAccountToken.ExpirationSeconds != 3607 || srcs[1].ConfigMap.Name != "kube-root-ca.crt" ||
				srcs[2].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.namespace" {
				t.Errorf("projected sources = %+v", srcs)
			}
			for _, c := range append(got.Spec.InitContainers, got.Spec.Containers...) {
				want := []corev1.VolumeMount{{Name: got.Spec.Volumes[0].Name, ReadOnly: true, MountPath: admission.ServiceAccountTokenMountPath}}
				if !reflect.DeepEqual(c.VolumeMounts, want) {
					t.Errorf("container %s mounts = %+v, want %+v", c.Name, c.VolumeMounts, want)
				}
			}
		})
	}
}

func TestRBACAuthorizesServiceAccounts(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := satoken.NewIssuer(key, "", clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnvWith(t, func(c *Config) { c.ServiceAccountIssuer, c.RBAC = issuer, true })
	tr, err := env.client.CoreV1().ServiceAccounts("default").CreateToken(env.ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa := clientWithToken(t, env, tr.Status.Token)
	bind := func(name, role string) {
		t.Helper()
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: "default"}}}
		if _, err := env.client.RbacV1().RoleBindings("default").Create(env.ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const denied = `pods is forbidden: User "system:serviceaccount:default:default" cannot list resource "pods" in API group "" in the namespace "default"`
	steps := []struct {
		name    string
		bind    string // ClusterRole to bind first, if any
		wantErr string
	}{
		{name: "no binding", wantErr: denied},
		{name: "binding to a missing role", bind: "missing", wantErr: denied + `: RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found`},
		{name: "view", bind: "view"},
	}
	for _, st := range steps {
		if st.bind != "" {
			bind("to-"+st.bind, st.bind)
		}
		_, err := sa.CoreV1().Pods("default").List(env.ctx, metav1.ListOptions{})
		if got := fmt.Sprint(err); (st.wantErr == "" && err != nil) || (st.wantErr != "" && got != st.wantErr) {
			t.Errorf("%s: list pods err = %v, want %q", st.name, err, st.wantErr)
		}
	}
	if _, err := sa.Discovery().ServerGroups(); err != nil {
		t.Errorf("discovery with a service-account token: %v", err)
	}
	req, _ := http.NewRequest(http.MethodGet, env.http.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var status metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		t.Fatal(err)
	}
	if want := `forbidden: User "system:serviceaccount:default:default" cannot get path "/metrics"`; resp.StatusCode != http.StatusForbidden || status.Message != want {
		t.Errorf("/metrics: %d %q, want 403 %q", resp.StatusCode, status.Message, want)
	}
}
