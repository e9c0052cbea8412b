package jobset

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// sync reconciles the JobSet named by key and returns when to look again.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, fmt.Errorf("split key %q: %w", key, err)
	}
	js, err := c.getJobSet(key, ns, name)
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

// getJobSet reads the JobSet from the informer's cache. A cache that has
// not yet shown this controller's last status update reads as NotFound:
// the update's own event queues the JobSet again.
func (c *Controller) getJobSet(key, ns, name string) (*jobsetapi.JobSet, error) {
	js, err := c.jobsetLister.JobSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.written.Forget(key)
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("get jobset %s from cache: %w", key, err)
	}
	if c.written.Behind(key, js.ResourceVersion) {
		c.log.Debug("jobset cache behind its status update, waiting for the update event", "namespace", ns, "jobset", name)
		return nil, apierrors.NewNotFound(GroupVersionResource.GroupResource(), name)
	}
	return js, nil
}
