// Package resultretention is the controller that bounds the kept
// ContainerResults (results.batchlet.dev/v1): every interval it lists
// their metadata and deletes those older than the retention age, then the
// oldest beyond the retention count. Results have no owner, so nothing
// else deletes them.
package resultretention

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/controller/controllerctx"
	"github.com/batchlet/batchlet/results"
)

// Defaults of Options.
const (
	DefaultMaxAge   = 7 * 24 * time.Hour
	DefaultMaxCount = 100_000
	maxInterval     = time.Minute
	minInterval     = time.Second
	// listPage bounds a sweep's transient memory: serving a page decodes
	// each whole result (≈ 90 KB in flight per result at 100,000 kept).
	listPage = 250
)

// Options configure the retention.
type Options struct {
	// Retention bounds the results; a zero MaxAge or MaxCount takes the
	// default, a negative one no bound.
	Retention results.Retention
	// Interval between sweeps; default a tenth of MaxAge, between a second
	// and a minute.
	Interval time.Duration
}

// Controller deletes expired results.
type Controller struct {
	meta  metadata.Interface
	clock clock.WithTicker
	log   *slog.Logger
	opts  Options
}

// New builds the controller from the shared context.
func New(cc controllerctx.Context, opts Options) (*Controller, error) {
	cc = cc.WithDefaults()
	if cc.Metadata == nil {
		return nil, fmt.Errorf("resultretention: a metadata client is required")
	}
	opts.Retention.MaxAge = orDefault(opts.Retention.MaxAge, DefaultMaxAge)
	opts.Retention.MaxCount = int(orDefault(time.Duration(opts.Retention.MaxCount), DefaultMaxCount))
	if opts.Interval <= 0 {
		opts.Interval = min(max(opts.Retention.MaxAge/10, minInterval), maxInterval)
	}
	return &Controller{meta: cc.Metadata, clock: cc.Clock, log: cc.Logger.With("controller", "result-retention"), opts: opts}, nil
}

// orDefault: 0 takes def, negative means no bound (0 for Retention).
func orDefault(v, def time.Duration) time.Duration {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Run sweeps every interval until ctx ends; workers is ignored.
func (c *Controller) Run(ctx context.Context, _ int) error {
	t := c.clock.NewTicker(c.opts.Interval)
	defer t.Stop()
	for {
		if err := c.Sweep(ctx); err != nil {
			c.log.Warn("sweep container results", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Sweep deletes the results the retention expires now.
func (c *Controller) Sweep(ctx context.Context) error {
	e, err := c.scan(ctx)
	if apierrors.IsNotFound(err) {
		return nil // the results CRD is not installed (a real cluster)
	}
	if err != nil {
		return err
	}
	expired := e.Expired()
	for _, s := range expired {
		err := c.meta.Resource(results.GVR).Namespace(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	if len(expired) > 0 {
		c.log.Info("deleted expired container results", "count", len(expired), "kept", e.Seen()-len(expired))
	}
	return nil
}

// scan reads every result's metadata, in pages, into an Expiry sized by
// the count the first page reports, so that it keeps only the candidates.
// A result is as old as its creation: the agent creates it when the
// container terminates.
func (c *Controller) scan(ctx context.Context) (*results.Expiry, error) {
	var e *results.Expiry
	opts := metav1.ListOptions{Limit: listPage}
	for {
		l, err := c.meta.Resource(results.GVR).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		if e == nil {
			total := -1
			if l.Continue == "" {
				total = len(l.Items)
			} else if l.RemainingItemCount != nil {
				total = len(l.Items) + int(*l.RemainingItemCount)
			}
			e = c.opts.Retention.NewExpiry(c.clock.Now(), total)
		}
		for i := range l.Items {
			m := &l.Items[i]
			e.Add(results.Stored{Namespace: m.Namespace, Name: m.Name, FinishedAt: m.CreationTimestamp.Time})
		}
		if l.Continue == "" {
			return e, nil
		}
		opts.Continue = l.Continue
	}
}
