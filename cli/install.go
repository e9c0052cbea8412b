package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/batchlet/batchlet/install"
)

func newCRDsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "crds",
		Short: "Print the CustomResourceDefinitions batchlet's controllers need on a real cluster (JobSet)",
		Long: `Crds prints the jobset.x-k8s.io CustomResourceDefinition, generated from
the Go types of the JobSet API batchlet implements. It is about 800 KB, over
kubectl's client-side apply limit: apply it with

  batchlet crds | kubectl apply --server-side -f -

or let "batchlet install" apply it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := install.CRDYAML()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
}

func newInstallCommand() *cobra.Command {
	var (
		kubeconfig string
		dryRun     bool
		certDir    string
		opts       = install.Options{Namespace: install.DefaultNamespace}
	)
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install what batchlet's controllers need on a real cluster: CRDs, RBAC, optionally a Deployment",
		Long: `Install applies, to the cluster of a kubeconfig, the JobSet
CustomResourceDefinition, a namespace, service accounts and the RBAC the
selected controllers need, and with --image a Deployment that runs
"batchlet controllers" from that image with leader election (so two
replicas can run). Existing objects are replaced. With --dry-run it prints
the objects as YAML instead.

  batchlet install --kubeconfig ~/.kube/config --controllers jobset
  batchlet install --controllers jobset --image registry.example/batchlet:v1 --replicas 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var client dynamic.Interface
			if !dryRun {
				cfg, err := loadKubeconfig(kubeconfig)
				if err != nil {
					return err
				}
				if client, err = dynamic.NewForConfig(cfg); err != nil {
					return fmt.Errorf("building a client for %s: %w", cfg.Host, err)
				}
			}
			certs, err := webhookCerts(cmd.Context(), client, opts, certDir)
			if err != nil {
				return err
			}
			opts.Webhook = certs
			if certs == nil && slices.Contains(opts.Controllers, "jobset") {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning: no JobSet webhook (give --image or --webhook-url): the cluster will not apply JobSet's defaults and checks, so failure-policy rules must be named")
			}
			objs, err := install.Objects(opts)
			if err != nil {
				return err
			}
			if dryRun {
				for _, obj := range objs {
					data, err := yaml.Marshal(obj.Object)
					if err != nil {
						return fmt.Errorf("rendering %s: %w", obj.GetName(), err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "---\n%s", data)
				}
				return nil
			}
			return install.Applier{Client: client, Out: cmd.OutOrStdout()}.Apply(cmd.Context(), objs)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&opts.Namespace, "namespace", install.DefaultNamespace, "namespace of the service accounts, the leader-election Lease and the Deployment")
	fl.StringSliceVar(&opts.Controllers, "controllers", []string{"jobset"}, "controllers to grant RBAC for (and to run in the Deployment)")
	fl.BoolVar(&opts.Agent, "agent", false, "also create a service account and role for `batchlet agent` nodes")
	fl.BoolVar(&opts.SkipCRDs, "skip-crds", false, "do not apply the CustomResourceDefinitions")
	fl.StringVar(&opts.Image, "image", "", "run the controllers in the cluster from this image (adds a Deployment)")
	fl.Int32Var(&opts.Replicas, "replicas", 1, "replicas of the Deployment (leader election keeps one active)")
	fl.StringVar(&opts.JobControllerMode, "job-controller-mode", "", "the Deployment's --job-controller-mode; alongside on a cluster whose kube-controller-manager runs its Job controller")
	fl.BoolVar(&dryRun, "dry-run", false, "print the objects as YAML instead of applying them")
	fl.StringVar(&opts.WebhookURL, "webhook-url", "", "https URL of `batchlet controllers --webhook-bind-address` run outside the cluster; the API server calls it to default and check JobSets")
	fl.StringVar(&certDir, "webhook-cert-dir", "", "with --webhook-url: directory for the webhook's CA and serving certificate (tls.crt, tls.key), to pass to `batchlet controllers --webhook-cert-dir`")
	return cmd
}

// webhookCerts issues (or reuses) the JobSet webhook's certificates: in
// --webhook-cert-dir for a webhook outside the cluster, in the install's
// Secret for the Deployment's. Nil when there is no webhook.
func webhookCerts(ctx context.Context, client dynamic.Interface, opts install.Options, certDir string) (*install.WebhookCerts, error) {
	switch {
	case opts.WebhookURL != "":
		host, err := install.WebhookHost(opts.WebhookURL)
		if err != nil {
			return nil, err
		}
		if certDir == "" {
			return nil, fmt.Errorf("--webhook-url needs --webhook-cert-dir for the serving certificate")
		}
		certs, err := install.NewWebhookCerts(filepath.Join(certDir, "ca"), []string{host})
		if err != nil {
			return nil, err
		}
		return certs, certs.WriteServingFiles(certDir)
	case opts.Image != "" && slices.Contains(opts.Controllers, "jobset"):
		scratch, err := os.MkdirTemp("", "batchlet-webhook-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(scratch)
		return install.InClusterWebhookCerts(ctx, client, opts.Namespace, scratch)
	}
	return nil, nil
}

// loadKubeconfig loads the client configuration of an explicit path, else
// KUBECONFIG or ~/.kube/config, else the in-cluster configuration.
func loadKubeconfig(path string) (*rest.Config, error) {
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	loading.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return cfg, nil
}
