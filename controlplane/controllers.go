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

	"github.com/batchlet/batchlet/controller/certificates"
	"github.com/batchlet/batchlet/controller/controllerctx"
	gccontroller "github.com/batchlet/batchlet/controller/gc"
	jobcontroller "github.com/batchlet/batchlet/controller/job"
	jobsetcontroller "github.com/batchlet/batchlet/controller/jobset"
	"github.com/batchlet/batchlet/controller/nodelifecycle"
	"github.com/batchlet/batchlet/controller/podgc"
	"github.com/batchlet/batchlet/controller/resultretention"
	"github.com/batchlet/batchlet/controller/rootca"
	"github.com/batchlet/batchlet/controller/ttl"
	"github.com/batchlet/batchlet/pki"
	"github.com/batchlet/batchlet/results"
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
	ResultRetention         = "result-retention"
	CSRSigning              = "csrsigning"
)

// ControllerOptions are the controllers' settings that come from flags.
type ControllerOptions struct {
	// ResultRetention bounds the kept ContainerResults (see
	// resultretention.Options; zero values take its defaults).
	ResultRetention results.Retention
	// JobMode says which Jobs, by spec.managedBy, the Job controller
	// manages (jobcontroller.ModeReplace when empty).
	JobMode jobcontroller.Mode
	// JobPodFailureBackOff and JobMaxPodFailureBackOff are the Job
	// controller's delay before a failed pod is replaced and its cap
	// (upstream's 10s and 10m when zero).
	JobPodFailureBackOff, JobMaxPodFailureBackOff time.Duration
	// TerminatedPodGCThreshold is podgc.Options.TerminatedPodThreshold
	// (0: upstream's 12,500; negative: off).
	TerminatedPodGCThreshold int
	// TerminatedPodGCPolicy is podgc.Options.Policy (empty: threshold).
	TerminatedPodGCPolicy string
	// ClusterSigner signs nodes' certificate requests (the server's CA);
	// nil leaves them to another signer (kube-controller-manager).
	ClusterSigner *pki.CA
}

// controllers is the one table of batchlet's controllers, in start order,
// which both the embedded control plane and `batchlet controllers` run.
func controllers(opts ControllerOptions) []controllerctx.Registration {
	type reg = controllerctx.Registration
	return []reg{
		{Name: JobController, Workers: 4, EnabledByDefault: true,
			Init: controllerctx.InitWith(jobcontroller.New, jobcontroller.Options{SyncBatchPeriod: jobSyncBatchPeriod, Mode: opts.JobMode,
				PodFailureBackOff: opts.JobPodFailureBackOff, MaxPodFailureBackOff: opts.JobMaxPodFailureBackOff})},
		{Name: JobSetController, Workers: 2, EnabledByDefault: true, Init: controllerctx.Init(jobsetcontroller.New)},
		// Foreground, as upstream's ttl-after-finished-controller deletes.
		{Name: TTLController, Workers: 2, EnabledByDefault: true,
			Init: controllerctx.InitWith(ttl.New, ttl.Options{Propagation: metav1.DeletePropagationForeground})},
		{Name: GarbageCollector, Workers: 2, EnabledByDefault: true, Init: controllerctx.InitWith(gccontroller.New, gccontroller.Options{DiscoveryInterval: gcDiscoveryInterval})},
		{Name: Scheduler, Workers: 2, EnabledByDefault: true, Init: controllerctx.Init(scheduler.New)},
		{Name: PodGCController, Workers: 1, EnabledByDefault: true, Init: controllerctx.InitWith(podgc.New, podgc.Options{TerminatedPodThreshold: opts.TerminatedPodGCThreshold, Policy: opts.TerminatedPodGCPolicy})},
		{Name: NodeLifecycleController, Workers: 1, EnabledByDefault: true, Init: controllerctx.InitWith(nodelifecycle.New, nodelifecycle.Options{})},
		{Name: RootCAPublisher, Workers: 1, EnabledByDefault: true, Init: controllerctx.Init(rootca.New)},
		{Name: ResultRetention, Workers: 1, EnabledByDefault: true,
			Init: controllerctx.InitWith(resultretention.New, resultretention.Options{Retention: opts.ResultRetention})},
		{Name: CSRSigning, Workers: 1, EnabledByDefault: true,
			Init: controllerctx.InitWith(certificates.New, certificates.Options{CA: opts.ClusterSigner})},
	}
}

// ControllerNames is every controller batchlet has, in start order.
func ControllerNames() []string {
	var names []string
	for _, r := range controllers(ControllerOptions{}) {
		names = append(names, r.Name)
	}
	return names
}

// DefaultControllers are the controllers that run when no list is given.
func DefaultControllers() []string {
	var names []string
	for _, r := range controllers(ControllerOptions{}) {
		if r.EnabledByDefault {
			names = append(names, r.Name)
		}
	}
	return names
}

// Runner runs a named component until the control plane stops.
type Runner func(name string, fn func() error)

// gcDiscoveryInterval is how often the garbage collector looks for new
// resources to watch (kube-controller-manager's resync period).
const gcDiscoveryInterval = 30 * time.Second

// StartControllers builds the named controllers against the API of cfg —
// batchlet's own or a real kube-apiserver — and runs each with run. src,
// when not nil, serves their informers from batchlet's store in this
// process. It returns the shared clients so an embedded agent can reuse
// them.
func StartControllers(ctx context.Context, cfg *rest.Config, src LocalSource, names []string, opts ControllerOptions, log *slog.Logger, reg prometheus.Registerer, run Runner) (*clients, error) {
	selected, err := selectControllers(names, opts)
	if err != nil {
		return nil, err
	}
	c, err := newClients(cfg, src)
	if err != nil {
		return nil, err
	}
	cc := c.controllerContext(log, reg)
	type started struct {
		name string
		run  func() error
	}
	var toRun []started
	for _, r := range selected {
		ctl, err := r.Init(cc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Name, err)
		}
		toRun = append(toRun, started{r.Name, func() error { return ctl.Run(ctx, r.Workers) }})
	}
	// Informers are requested by the constructors; start them after.
	c.start(ctx)
	c.waitForSync(ctx)
	for _, s := range toRun {
		run(s.name, s.run)
	}
	return c, nil
}

// selectControllers returns the table's rows named in names, in table
// order, refusing a name the table does not have.
func selectControllers(names []string, opts ControllerOptions) ([]controllerctx.Registration, error) {
	table := controllers(opts)
	for _, n := range names {
		if !slices.ContainsFunc(table, func(r controllerctx.Registration) bool { return r.Name == n }) {
			return nil, fmt.Errorf("unknown controller %q (known: %v)", n, ControllerNames())
		}
	}
	return slices.DeleteFunc(table, func(r controllerctx.Registration) bool { return !slices.Contains(names, r.Name) }), nil
}

// controllerContext is the Context every controller is built from.
func (c *clients) controllerContext(log *slog.Logger, reg prometheus.Registerer) controllerctx.Context {
	return controllerctx.Context{
		Client: c.kube, Informers: c.informers,
		JobSetClient: c.jobsets, JobSetInformers: c.jobsetInf,
		Metadata: c.meta, MetadataInformers: c.metaInf,
		RootCA: c.rootCA, Clock: clock.RealClock{}, Logger: log, Registerer: reg,
	}
}

// start starts every shared informer factory.
func (c *clients) start(ctx context.Context) {
	c.informers.Start(ctx.Done())
	c.jobsetInf.Start(ctx.Done())
	c.metaInf.Start(ctx.Done())
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
		for _, ok := range c.jobsetInf.WaitForCacheSync(closed) {
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
