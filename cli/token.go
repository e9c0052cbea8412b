package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/batchlet/batchlet/apiserver/rbac"
	"github.com/batchlet/batchlet/pki"
)

type tokenFlags struct {
	kubeconfig       string
	dataDir          string
	ttl              time.Duration
	description      string
	printJoinCommand bool
}

func newTokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage the bootstrap tokens agents join a server with",
	}
	cmd.AddCommand(newTokenCreateCommand())
	return cmd
}

func newTokenCreateCommand() *cobra.Command {
	var f tokenFlags
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a bootstrap token an agent joins the server with",
		Long: `Create makes a bootstrap token (abcdef.0123456789abcdef) as kubeadm's "token
create" does: a bootstrap.kubernetes.io/token Secret in kube-system that
authenticates as system:bootstrap:<id> in system:bootstrappers and
system:bootstrappers:kubeadm:default-node-token, which may ask for a node's
client certificate. It expires after --ttl (0: never).

With --print-join-command it prints the agent command that joins with it,
pinning the server's CA by its public-key hash:

  batchlet token create --print-join-command
  batchlet agent --server https://10.0.0.1:6443 --token abcdef.0123456789abcdef \
    --ca-cert-hash sha256:... --node-name worker-1 --listen-address 10.0.0.11`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := clientConfig(f.kubeconfig, "", f.dataDir)
			if err != nil {
				return err
			}
			return createToken(cmd.Context(), cfg, f, time.Now(), cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "admin kubeconfig of the server (default: $KUBECONFIG, then the data dir's)")
	fl.StringVar(&f.dataDir, "data-dir", "", "data dir of the server whose kubeconfig to use")
	fl.DurationVar(&f.ttl, "ttl", 24*time.Hour, "how long the token authenticates (0: never expires)")
	fl.StringVar(&f.description, "description", "", "what the token is for")
	fl.BoolVar(&f.printJoinCommand, "print-join-command", false, "print the `batchlet agent` command that joins with the token instead of the token alone")
	return cmd
}

// createToken makes the token's Secret and prints the token or the join
// command.
func createToken(ctx context.Context, cfg *rest.Config, f tokenFlags, now time.Time, out io.Writer) error {
	token, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return fmt.Errorf("generate token: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("build client: %w", err)
	}
	secret := bootstrapTokenSecret(token, f.description, f.ttl, now)
	if _, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create bootstrap token secret: %w", err)
	}
	if !f.printJoinCommand {
		_, err := fmt.Fprintln(out, token)
		return err
	}
	caPEM, err := caOf(cfg)
	if err != nil {
		return err
	}
	hash, err := pki.CAHash(caPEM)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "batchlet agent --server %s --token %s --ca-cert-hash %s\n", cfg.Host, token, hash)
	return err
}

// bootstrapTokenSecret is kubeadm's Secret for token.
func bootstrapTokenSecret(token, description string, ttl time.Duration, now time.Time) *corev1.Secret {
	id, secret, _ := strings.Cut(token, ".")
	data := map[string][]byte{
		bootstrapapi.BootstrapTokenIDKey:               []byte(id),
		bootstrapapi.BootstrapTokenSecretKey:           []byte(secret),
		bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
		bootstrapapi.BootstrapTokenUsageSigningKey:     []byte("true"),
		bootstrapapi.BootstrapTokenExtraGroupsKey:      []byte(rbac.NodeBootstrapTokenGroup),
	}
	if description != "" {
		data[bootstrapapi.BootstrapTokenDescriptionKey] = []byte(description)
	}
	if ttl > 0 {
		data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(now.Add(ttl).UTC().Format(time.RFC3339))
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(id), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data:       data,
	}
}

// caOf is the CA bundle (PEM) cfg verifies the server with.
func caOf(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile == "" {
		return nil, fmt.Errorf("the kubeconfig names no CA: cannot print the CA hash of a join command")
	}
	b, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read CA file: %w", err)
	}
	return b, nil
}
