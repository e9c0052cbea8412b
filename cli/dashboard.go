package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/batchlet/batchlet/dashboard"
)

func newDashboardCommand() *cobra.Command {
	var f waitFlags
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Print a new one-time login URL of the server's web dashboard",
		Long: `Dashboard asks a running batchlet server for a new one-time login URL of
its web dashboard (/ui), as the one it prints at start: opening it logs a
browser in once. A new URL revokes the previous unused one.

The server is the one of --kubeconfig, else KUBECONFIG, else the kubeconfig
in --data-dir (default ~/.batchlet); its admin token asks for the URL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := clientConfig(f.kubeconfig, f.server, f.dataDir)
			if err != nil {
				return err
			}
			url, err := dashboardLoginURL(cfg)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), url)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the server (default: KUBECONFIG, then the data dir's)")
	fl.StringVar(&f.server, "server", "", "URL of the server (overrides the kubeconfig's)")
	fl.StringVar(&f.dataDir, "data-dir", "", "data dir of a batchlet server whose kubeconfig to use (default ~/.batchlet)")
	return cmd
}

// dashboardLoginURL asks the server of cfg for a one-time login URL.
func dashboardLoginURL(cfg *rest.Config) (string, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	resp, err := client.Post(strings.TrimSuffix(cfg.Host, "/")+dashboard.Prefix+"/api/login-url", "application/json", nil)
	if err != nil {
		return "", fmt.Errorf("ask %s for a dashboard login URL: %w", cfg.Host, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("read the dashboard's answer: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return "", fmt.Errorf("%s serves no dashboard (started with --dashboard=false, or not a batchlet server)", cfg.Host)
	default:
		return "", fmt.Errorf("dashboard login URL from %s: %s: %s", cfg.Host, resp.Status, strings.TrimSpace(string(body)))
	}
	var u dashboard.LoginURL
	if err := json.Unmarshal(body, &u); err != nil || u.URL == "" {
		return "", fmt.Errorf("dashboard login URL from %s: unexpected answer %q", cfg.Host, body)
	}
	return u.URL, nil
}
