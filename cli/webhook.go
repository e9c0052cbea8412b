package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/batchlet/batchlet/install"
	"github.com/batchlet/batchlet/webhook"
)

// serveWebhook serves the JobSet admission webhook over TLS on addr until
// ctx ends. Every replica serves it, leader or not, as the API server may
// call any of them.
func serveWebhook(ctx context.Context, addr, certDir string, logger *slog.Logger) error {
	cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, install.WebhookCertFile), filepath.Join(certDir, install.WebhookKeyFile))
	if err != nil {
		return fmt.Errorf("loading the webhook certificate from %s: %w", certDir, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen for the webhook on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           webhook.Handler(logger),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("webhook server stopped", "address", addr, "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	logger.Info("serving the JobSet webhook", "address", ln.Addr().String())
	return nil
}
