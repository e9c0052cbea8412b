// Package dashboard is batchlet's web dashboard, served by `batchlet server`
// at /ui: Jobs and JobSets with their status, a live index grid, a pod
// timeline per index, events and logs of a Job, and a JobSet's replicated
// Jobs. It reads the cluster only through client-go (informers and the
// pods/log subresource), so it would work against any API server, pushes
// changes to the browser with server-sent events, and takes the API's admin
// token (a bearer header, or a session cookie from a one-time login URL).
package dashboard

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	jobsetclient "sigs.k8s.io/jobset/client-go/clientset/versioned"
	jobsetinformers "sigs.k8s.io/jobset/client-go/informers/externalversions"
)

//go:embed static
var staticFiles embed.FS

// Prefix is the path the dashboard is served under.
const Prefix = "/ui"

// Config configures a Dashboard.
type Config struct {
	// Token is the API's admin bearer token: requests carrying it, and
	// browsers that logged in with it or with a login code, see everything.
	Token string
	// Kube reads pod logs; JobSets is the JobSet client.
	Kube    kubernetes.Interface
	JobSets jobsetclient.Interface
	// Informers and JobSetInformers feed the pages; built over Kube and
	// JobSets when nil. The dashboard adds its indexers, so they must be
	// factories of its own, not started yet.
	Informers       informers.SharedInformerFactory
	JobSetInformers jobsetinformers.SharedInformerFactory
	// Clock times sessions and paces live updates.
	Clock clock.WithTicker
	// Logger receives structured logs; a discard logger when nil.
	Logger *slog.Logger
	// UpdateInterval is how often live updates are pushed at most; 250 ms
	// when zero.
	UpdateInterval time.Duration
	// SessionTTL bounds a browser session; 24 h when zero.
	SessionTTL time.Duration
}

// Dashboard serves the web UI.
type Dashboard struct {
	cfg     Config
	log     *slog.Logger
	auth    *authenticator
	store   *store
	changes *broadcaster
	handler http.Handler
}

// New builds a dashboard; Run feeds it.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Token == "" {
		return nil, errors.New("dashboard: no admin token")
	}
	if cfg.Kube == nil || cfg.JobSets == nil {
		return nil, errors.New("dashboard: no clients")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.UpdateInterval <= 0 {
		cfg.UpdateInterval = 250 * time.Millisecond
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 24 * time.Hour
	}
	if cfg.Informers == nil {
		cfg.Informers = informers.NewSharedInformerFactory(cfg.Kube, 0)
	}
	if cfg.JobSetInformers == nil {
		cfg.JobSetInformers = jobsetinformers.NewSharedInformerFactory(cfg.JobSets, 0)
	}
	d := &Dashboard{cfg: cfg, log: cfg.Logger, auth: newAuthenticator(cfg.Token, cfg.Clock, cfg.SessionTTL), changes: newBroadcaster()}
	var err error
	if d.store, err = newStore(cfg.Informers, cfg.JobSetInformers, d.changes); err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return nil, fmt.Errorf("dashboard assets: %w", err)
	}
	d.handler = d.routes(static)
	return d, nil
}

// LoginCode mints a one-time login code: /ui/login?code=CODE logs a browser
// in once. Each call revokes the previous unused code.
func (d *Dashboard) LoginCode() (string, error) { return d.auth.newCode() }

// Handler serves Prefix and below.
func (d *Dashboard) Handler() http.Handler { return d.handler }

// Run starts the informers and serves until ctx ends.
func (d *Dashboard) Run(ctx context.Context) error {
	d.cfg.Informers.Start(ctx.Done())
	d.cfg.JobSetInformers.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), d.store.synced...) {
		return ctx.Err()
	}
	d.store.markReady()
	d.log.Debug("dashboard caches synced")
	<-ctx.Done()
	d.cfg.Informers.Shutdown()
	d.cfg.JobSetInformers.Shutdown()
	return nil
}
