package jobset

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// sync reconciles the JobSet named by key and returns when to look again.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, fmt.Errorf("split key %q: %w", key, err)
	}
	js, err := c.getJobSet(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if js.DeletionTimestamp != nil || managedByOther(js) {
		return 0, nil
	}
	obs, err := c.observe(js)
	if err != nil {
		return 0, err
	}
	log := c.log.With("namespace", ns, "jobset", name)
	p, err := decide(obs, c.clock.Now(), log)
	if err != nil {
		return 0, fmt.Errorf("deciding for jobset %s: %w", key, err)
	}
	if err := c.apply(ctx, p, log); err != nil {
		return 0, err
	}
	return p.requeueAfter, nil
}

// managedByOther reports whether another controller owns this JobSet.
func managedByOther(js *jobsetapi.JobSet) bool {
	return js.Spec.ManagedBy != nil && *js.Spec.ManagedBy != jobsetapi.JobSetControllerName
}

func (c *Controller) observe(js *jobsetapi.JobSet) (observed, error) {
	jobs, err := c.jobsFor(js)
	if err != nil {
		return observed{}, err
	}
	obs := observed{js: js, jobs: jobs}
	if dnsHostnamesEnabled(js) {
		_, err := c.serviceLister.Services(js.Namespace).Get(subdomain(js))
		if err != nil && !apierrors.IsNotFound(err) {
			return observed{}, fmt.Errorf("get service %s/%s: %w", js.Namespace, subdomain(js), err)
		}
		obs.serviceExists = err == nil
	}
	return obs, nil
}

// getJobSet reads the JobSet from the API server (not the cache), so the
// decision sees the latest status.restarts.
func (c *Controller) getJobSet(ctx context.Context, ns, name string) (*jobsetapi.JobSet, error) {
	u, err := c.jobsets.Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return fromUnstructured(u)
}

func fromUnstructured(u *unstructured.Unstructured) (*jobsetapi.JobSet, error) {
	js := &jobsetapi.JobSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, js); err != nil {
		return nil, fmt.Errorf("convert jobset %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	setTypeMeta(js)
	return js, nil
}

func toUnstructured(js *jobsetapi.JobSet) (*unstructured.Unstructured, error) {
	setTypeMeta(js)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(js)
	if err != nil {
		return nil, fmt.Errorf("convert jobset %s/%s: %w", js.Namespace, js.Name, err)
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

func setTypeMeta(js *jobsetapi.JobSet) {
	js.APIVersion = jobsetapi.GroupVersion.String()
	js.Kind = jobSetKind
}
