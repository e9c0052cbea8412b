package controlplane

import (
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	jobsetclient "sigs.k8s.io/jobset/client-go/clientset/versioned"
	jobsetinformers "sigs.k8s.io/jobset/client-go/informers/externalversions"

	"github.com/batchlet/batchlet/dashboard"
)

// localEvents: the dashboard's event informer reads the store in-process
// too (a 10,000-pod Job writes some 20,000 events).
var localEvents = localKind{&corev1.Event{}, corev1.SchemeGroupVersion.WithResource("events")}

// newDashboard builds the web dashboard over the in-process API (its pod,
// Job and event informers read the store directly, as the controllers' do).
func newDashboard(cp *ControlPlane, cfg *rest.Config, src LocalSource, token string) (*dashboard.Dashboard, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dashboard client: %w", err)
	}
	jobsets, err := jobsetclient.NewForConfig(jsonConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("dashboard jobset client: %w", err)
	}
	typed, err := newTypedFactory(kube, src, []localKind{localPods, localJobs, localEvents}, nil)
	if err != nil {
		return nil, fmt.Errorf("dashboard informers: %w", err)
	}
	return dashboard.New(dashboard.Config{
		Token: token, Kube: kube, JobSets: jobsets, Informers: typed,
		JobSetInformers: jobsetinformers.NewSharedInformerFactoryWithOptions(jobsets, 0, jobsetinformers.WithTransform(trimManagedFields)),
		Logger:          cp.log.With("component", "dashboard"),
	})
}

// withDashboard serves the dashboard at /ui and below, the API elsewhere.
func withDashboard(api, ui http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == dashboard.Prefix || strings.HasPrefix(r.URL.Path, dashboard.Prefix+"/") {
			ui.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// DashboardLoginURL mints a one-time login URL of the web dashboard
// (revoking the previous unused one); "" when the dashboard is off.
func (cp *ControlPlane) DashboardLoginURL() (string, error) {
	if cp.dashboard == nil {
		return "", nil
	}
	code, err := cp.dashboard.LoginCode()
	if err != nil {
		return "", err
	}
	return cp.url + dashboard.Prefix + "/login?code=" + code, nil
}
