package gc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/batchlet/batchlet/results"
)

// Discoverer lists the resources a server serves (client-go's discovery
// client is one).
type Discoverer interface {
	ServerPreferredResources() ([]*metav1.APIResourceList, error)
}

// ignoredResources are never watched. Events, as upstream's garbage
// collector ignores them: they are many and never owners. ContainerResults
// (batchlet's own CRD), as the agent writes them without owners and only
// the retention deletes them (docs/api.md): there is one per pod, kept up
// to 100,000, so an informer of them held memory that followed the
// history of pods (about 0.5 KB per result) for nothing to collect.
var ignoredResources = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
	results.GVR.GroupResource():                  true,
}

// monitor watches one discovered resource until cancelled.
type monitor struct {
	res    Resource
	cancel context.CancelFunc
}

// WatchDiscovered makes Run also collect the resources d finds beyond the
// configured ones (custom resources of CRDs), discovering again every
// interval as upstream's collector resyncs its monitors: a resource that
// appears gets an informer, one that goes stops being watched.
func (c *Controller) WatchDiscovered(d Discoverer, every time.Duration) {
	c.discovery, c.discoverEvery = d, every
}

// runDiscovery re-discovers every interval until ctx ends.
func (c *Controller) runDiscovery(ctx context.Context) {
	for {
		if err := c.syncDiscovered(ctx); err != nil {
			c.log.Info("garbage collector discovery", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.clock.After(c.discoverEvery):
		}
	}
}

// syncDiscovered starts monitors of newly served resources and stops those
// of resources no longer served.
func (c *Controller) syncDiscovered(ctx context.Context) error {
	lists, err := c.discovery.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return fmt.Errorf("discover resources: %w", err)
	}
	found := c.deletableResources(lists)
	for gvr, r := range found {
		if _, ok := c.monitors[gvr]; !ok {
			c.startMonitor(ctx, r)
		}
	}
	if err != nil {
		return nil // partial discovery: keep what a failing group had
	}
	for gvr, m := range c.monitors {
		if _, ok := found[gvr]; !ok {
			m.cancel()
			c.mapper.remove(m.res)
			delete(c.monitors, gvr)
			c.log.Info("garbage collector stopped watching", "resource", gvr.String())
		}
	}
	return nil
}

// deletableResources are the discovered resources one can list, watch and
// delete, less the configured and the ignored ones.
func (c *Controller) deletableResources(lists []*metav1.APIResourceList) map[schema.GroupVersionResource]Resource {
	configured := map[schema.GroupResource]bool{}
	for _, r := range c.resources {
		configured[r.GVR.GroupResource()] = true
	}
	out := map[schema.GroupVersionResource]Resource{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, ar := range l.APIResources {
			gr := gv.WithResource(ar.Name).GroupResource()
			if strings.Contains(ar.Name, "/") || configured[gr] || ignoredResources[gr] ||
				!slices.Contains(ar.Verbs, "list") || !slices.Contains(ar.Verbs, "watch") || !slices.Contains(ar.Verbs, "delete") {
				continue
			}
			r := Resource{GVR: gv.WithResource(ar.Name), Kind: ar.Kind, Namespaced: ar.Namespaced}
			out[r.GVR] = r
		}
	}
	return out
}

// startMonitor watches r with an informer of its own, stopped with its
// monitor.
func (c *Controller) startMonitor(ctx context.Context, r Resource) {
	mctx, cancel := context.WithCancel(ctx)
	inf := c.monitorInformer(r.GVR)
	if err := inf.SetTransform(trimMetadata); err != nil {
		cancel()
		c.log.Info("garbage collector watch", "resource", r.GVR.String(), "err", err)
		return
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onUpsert(r, obj) },
		UpdateFunc: func(_, obj any) { c.onUpsert(r, obj) },
		DeleteFunc: c.onDelete,
	}); err != nil {
		cancel()
		c.log.Info("garbage collector watch", "resource", r.GVR.String(), "err", err)
		return
	}
	c.mapper.add(r)
	c.schedule(c.graph.linkKind(r.GVK()))
	c.monitors[r.GVR] = monitor{res: r, cancel: cancel}
	go inf.RunWithContext(mctx)
	c.log.Info("garbage collector watching", "resource", r.GVR.String())
}

// LocalInformers is a metadata informer factory that also makes informers
// of their own served in the same process as the API server (the embedded
// control plane's): no HTTP, no JSON, one decode shared with the other
// in-process informers.
type LocalInformers interface {
	// NewInformer is an unstarted informer of gvr's object metadata that
	// the factory neither shares nor starts; ok is false when gvr is not
	// served locally.
	NewInformer(gvr schema.GroupVersionResource) (inf cache.SharedIndexInformer, ok bool)
}

// monitorInformer is an informer of gvr's metadata of a monitor's own (it
// starts and stops it): local when the informer factory can make one,
// else over the metadata client.
func (c *Controller) monitorInformer(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	if f, ok := c.factory.(LocalInformers); ok {
		if inf, ok := f.NewInformer(gvr); ok {
			return inf
		}
	}
	return metadatainformer.NewFilteredMetadataInformer(c.client, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
}
