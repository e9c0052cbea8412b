package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/batchlet/batchlet/dashboard"
	"github.com/batchlet/batchlet/pki"
	"github.com/batchlet/batchlet/storage"
)

// ControlPlane is a running control plane.
type ControlPlane struct {
	opts     Options
	log      *slog.Logger
	url      string
	store    storage.Backend
	http     *http.Server
	inproc   *rest.Config
	local    LocalSource
	registry *prometheus.Registry
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	errMu    sync.Mutex
	firstErr error

	// dashboard is the web UI at /ui; nil unless Options.Dashboard.
	dashboard *dashboard.Dashboard
}

// URL is the HTTPS address of the API.
func (cp *ControlPlane) URL() string { return cp.url }

// ClientConfig is a client-go config that reaches the API in-process,
// authenticated as the admin.
func (cp *ControlPlane) ClientConfig() *rest.Config { return rest.CopyConfig(cp.inproc) }

// LocalSource serves informers and watches straight from the API server's
// store, in this process (see apiserver.Server.LocalListerWatcher).
func (cp *ControlPlane) LocalSource() LocalSource { return cp.local }

// Start brings up every component and returns once the API answers.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	opts.setDefaults()
	cp := &ControlPlane{opts: opts, log: opts.Logger}
	// Credentials from an earlier start mean a store existed: a missing
	// one is lost data, not a new cluster to create under the same CA.
	existing := hasCredentials(opts.DataDir)
	bundle, err := pki.Ensure(opts.DataDir, certHosts(opts.BindAddress))
	if err != nil {
		return nil, err
	}
	if cp.store, err = openStore(opts, existing); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cp.cancel = cancel
	api, err := newAPIServer(cp, bundle)
	if err != nil {
		cancel()
		_ = cp.store.Close()
		return nil, err
	}
	handler := api.handler
	if opts.Dashboard {
		if cp.dashboard, err = newDashboard(cp, api.inProcess, api.local, bundle.Token); err != nil {
			cancel()
			_ = cp.store.Close()
			return nil, err
		}
		handler = withDashboard(handler, cp.dashboard.Handler())
	}
	if err := cp.serve(handler, bundle); err != nil {
		cancel()
		_ = cp.store.Close()
		return nil, err
	}
	self, err := advertiseAddr(opts.BindAddress, cp.url)
	if err != nil {
		_ = cp.Shutdown(context.Background())
		return nil, err
	}
	api.advertise(self)
	kubeconfig, err := pki.Kubeconfig(cp.url, bundle)
	if err != nil {
		_ = cp.Shutdown(context.Background())
		return nil, err
	}
	if err := pki.WriteFileAtomic(KubeconfigPath(opts.DataDir), kubeconfig, 0o600); err != nil {
		_ = cp.Shutdown(context.Background())
		return nil, err
	}
	cp.inproc, cp.local = api.inProcess, api.local
	cp.goRun("apiserver", func() error { return api.run(runCtx) })
	if cp.dashboard != nil {
		cp.goRun("dashboard", func() error { return cp.dashboard.Run(runCtx) })
	}
	if err := cp.startComponents(runCtx, bundle); err != nil {
		_ = cp.Shutdown(context.Background())
		return nil, err
	}
	cp.log.Info("control plane started", "url", cp.url, "dataDir", opts.DataDir, "runtime", opts.Runtime)
	return cp, nil
}

// goRun runs a component until the control plane stops, recording its
// first error.
func (cp *ControlPlane) goRun(name string, fn func() error) {
	cp.wg.Add(1)
	go func() {
		defer cp.wg.Done()
		err := fn()
		cp.log.Debug("component stopped", "component", name)
		if err != nil && !errors.Is(err, context.Canceled) {
			cp.log.Error("component stopped", "component", name, "err", err)
			cp.errMu.Lock()
			if cp.firstErr == nil {
				cp.firstErr = fmt.Errorf("%s: %w", name, err)
			}
			cp.errMu.Unlock()
		}
	}()
}

func (cp *ControlPlane) serve(handler http.Handler, bundle *pki.Bundle) error {
	addr := net.JoinHostPort(cp.opts.BindAddress, strconv.Itoa(cp.opts.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	host := cp.opts.BindAddress
	if host == "0.0.0.0" || host == "::" || host == "" {
		host = "127.0.0.1"
	}
	cp.url = "https://" + net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	cp.http = &http.Server{
		Handler: handler,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{bundle.ServerCert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"},
			// Nodes authenticate with certificates the CA signed.
			ClientCAs: bundle.CA.Pool(), ClientAuth: tls.VerifyClientCertIfGiven},
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(cp.log.Handler(), slog.LevelDebug),
	}
	go func() {
		if err := cp.http.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cp.log.Error("https server stopped", "err", err)
		}
	}()
	return nil
}

// Shutdown stops the components, then the HTTPS server and the store.
func (cp *ControlPlane) Shutdown(ctx context.Context) error {
	cp.cancel()
	done := make(chan struct{})
	go func() { cp.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	if cp.http != nil {
		// Watches never end by themselves: give plain requests a moment to
		// finish, then close whatever is left.
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_ = cp.http.Shutdown(sctx)
		cancel()
		_ = cp.http.Close()
	}
	err := cp.store.Close()
	cp.errMu.Lock()
	defer cp.errMu.Unlock()
	return errors.Join(cp.firstErr, err)
}

func sanitizeNodeName(name string) string {
	name = strings.ToLower(name)
	if i := strings.IndexByte(name, '.'); i > 0 && len(name) > 63 {
		name = name[:i]
	}
	return name
}

var _ = os.Getpid
