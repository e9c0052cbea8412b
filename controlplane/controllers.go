package controlplane

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	gccontroller "github.com/batchlet/batchlet/controller/gc"
	jobcontroller "github.com/batchlet/batchlet/controller/job"
	jobsetcontroller "github.com/batchlet/batchlet/controller/jobset"
	"github.com/batchlet/batchlet/controller/nodelifecycle"
	"github.com/batchlet/batchlet/controller/podgc"
	"github.com/batchlet/batchlet/controller/rootca"
	"github.com/batchlet/batchlet/controller/ttl"
	"github.com/batchlet/batchlet/scheduler"
)

// Controller names, as `batchlet controllers --controllers` takes them.
const (
	JobController           = "job"
	JobSetController        = "jobset"
	TTLController           = "ttl-after-finished"
	GarbageCollector        = "garbage-collector"
	Scheduler               = "scheduler"
	PodGCController         = "podgc"
	NodeLifecycleController = "nodelifecycle"
	RootCAPublisher         = "root-ca-cert-publisher"
)

// AllControllers is every controller batchlet has, in start order.
var AllControllers = []string{JobController, JobSetController, TTLController, GarbageCollector, Scheduler, PodGCController, NodeLifecycleController, RootCAPublisher}

// Runner runs a named component until the control plane stops.
type Runner func(name string, fn func() error)

// controllerBuilder builds one controller and returns its run function.
type controllerBuilder func(ctx context.Context, c *clients, log *slog.Logger, reg prometheus.Registerer) (func() error, error)

// controllerBuilders maps each controller name to its builder.
func controllerBuilders() map[string]controllerBuilder {
	return map[string]controllerBuilder{
		JobController: func(ctx context.Context, c *clients, log *slog.Logger, reg prometheus.Registerer) (func() error, error) {
			ctl, err := jobcontroller.NewController(ctx, c.informers.Core().V1().Pods(), c.informers.Batch().V1().Jobs(), c.kube, jobcontroller.Options{
				Clock: clock.RealClock{}, Logger: log, Registerer: reg, SyncBatchPeriod: jobSyncBatchPeriod,
			})
			return func() error { return ctl.Run(ctx, 4) }, err
		},
		JobSetController: func(ctx context.Context, c *clients, log *slog.Logger, reg prometheus.Registerer) (func() error, error) {
			ctl, err := jobsetcontroller.NewController(c.kube, c.dyn, c.informers, c.dynInf, jobsetcontroller.Options{
				Clock: clock.RealClock{}, Logger: log, Registerer: reg,
			})
			return func() error { return ctl.Run(ctx, 2) }, err
		},
		TTLController: func(ctx context.Context, c *clients, log *slog.Logger, reg prometheus.Registerer) (func() error, error) {
			// Foreground, as upstream's ttl-after-finished-controller deletes.
			ctl, err := ttl.NewController(c.informers.Batch().V1().Jobs(), c.kube, ttl.Options{
				Clock: clock.RealClock{}, Logger: log, Registerer: reg, Propagation: metav1.DeletePropagationForeground,
			})
			return func() error { return ctl.Run(ctx, 2) }, err
		},
		GarbageCollector: func(ctx context.Context, c *clients, log *slog.Logger, reg prometheus.Registerer) (func() error, error) {
			ctl, err := gccontroller.New(c.meta, c.metaInf, nil, clock.RealClock{}, log, reg)
			return func() error { return ctl.Run(ctx, 2) }, err
		},
		Scheduler: func(ctx context.Context, c *clients, log *slog.Logger, reg prometheus.Registerer) (func() error, error) {
			ctl, err := scheduler.New(c.kube, c.informers, clock.RealClock{}, log, reg)
			return func() error { return ctl.Run(ctx, 2) }, err
		},
		PodGCController: func(ctx context.Context, c *clients, log *slog.Logger, reg prometheus.Registerer) (func() error, error) {
			ctl, err := podgc.New(c.kube, c.informers, clock.RealClock{}, log, reg, podgc.Options{})
			return func() error { return ctl.Run(ctx, 1) }, err
		},
		NodeLifecycleController: func(ctx context.Context, c *clients, log *slog.Logger, reg prometheus.Registerer) (func() error, error) {
			ctl, err := nodelifecycle.New(c.kube, c.informers, clock.RealClock{}, log, reg, nodelifecycle.Options{})
			return func() error { return ctl.Run(ctx, 1) }, err
		},
		RootCAPublisher: func(ctx context.Context, c *clients, log *slog.Logger, _ prometheus.Registerer) (func() error, error) {
			ctl, err := rootca.New(c.kube, c.informers.Core().V1().Namespaces(), c.rootCA, log)
			return func() error { return ctl.Run(ctx, 1) }, err
		},
	}
}

// StartControllers builds the named controllers against the API of cfg —
// batchlet's own or a real kube-apiserver — and runs each with run. src,
// when not nil, serves their informers from batchlet's store in this
// process. It returns the shared clients so an embedded agent can reuse
// them.
func StartControllers(ctx context.Context, cfg *rest.Config, src LocalSource, names []string, log *slog.Logger, reg prometheus.Registerer, run Runner) (*clients, error) {
	builders := controllerBuilders()
	for _, n := range names {
		if builders[n] == nil {
			return nil, fmt.Errorf("unknown controller %q (known: %v)", n, AllControllers)
		}
	}
	c, err := newClients(cfg, src)
	if err != nil {
		return nil, err
	}
	type started struct {
		name string
		run  func() error
	}
	var toRun []started
	for _, n := range AllControllers {
		if !slices.Contains(names, n) {
			continue
		}
		fn, err := builders[n](ctx, c, log, reg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		toRun = append(toRun, started{n, fn})
	}
	// Informers are requested by the constructors; start them after.
	c.informers.Start(ctx.Done())
	c.dynInf.Start(ctx.Done())
	c.metaInf.Start(ctx.Done())
	c.waitForSync(ctx)
	for _, s := range toRun {
		run(s.name, s.run)
	}
	return c, nil
}

// waitForSync polls the informers every millisecond until all have synced.
// Controllers wait for their caches with client-go's 100 ms poll, which
// checks once immediately: syncing here first takes that 100 ms off every
// start of `batchlet run`.
func (c *clients) waitForSync(ctx context.Context) {
	closed := make(chan struct{})
	close(closed)
	synced := func() bool {
		for _, ok := range c.informers.WaitForCacheSync(closed) {
			if !ok {
				return false
			}
		}
		for _, ok := range c.dynInf.WaitForCacheSync(closed) {
			if !ok {
				return false
			}
		}
		for _, ok := range c.metaInf.WaitForCacheSync(closed) {
			if !ok {
				return false
			}
		}
		return true
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !synced() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
