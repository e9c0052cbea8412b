package cli

import (
	"io"
	"log/slog"
	"strings"

	"k8s.io/klog/v2"
)

// newLogger returns a text logger at level ("debug", "info", "warn",
// "error"); an empty level discards everything (batchlet run's default).
func newLogger(level string, w io.Writer) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "":
		return slog.New(slog.DiscardHandler)
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// routeKlog sends client-go's klog output through logger, so the process
// has one log format and `batchlet run` stays quiet by default. klog is
// process-global, so only the command layer calls this.
func routeKlog(logger *slog.Logger) {
	klog.SetSlogLogger(logger)
}
