package cli

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/batchlet/batchlet/apiserver"
	"github.com/batchlet/batchlet/controlplane"
	"github.com/batchlet/batchlet/pki"
)

// backupCredentials are the files of a data dir a restored server needs
// beside its store: the CA (so kubeconfigs and agents' trust stay valid),
// the serving certificate, the admin token, the service-account signing
// key (so issued tokens stay valid) and the kubeconfig.
var backupCredentials = []string{pki.CAFile, pki.CAKeyFile, pki.CertFile, pki.KeyFile, pki.TokenFile, pki.SAKeyFile, "kubeconfig"}

func newBackupCommand() *cobra.Command {
	var dataDir, out string
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Write a consistent backup of a running server's store and credentials",
		Long: `Backup asks the server running on --data-dir for a consistent snapshot of its
store (every write acknowledged before the backup started; the server keeps
serving meanwhile) and writes it, with the data dir's credentials, to --out
as a gzipped tar.

Restore into a fresh data dir and start a server there:

  mkdir D2 && tar -xzf backup.tar.gz -C D2 && batchlet server --data-dir D2

The server must be running; the snapshot is streamed by its admin-only
endpoint ` + apiserver.BackupPath + `. A stopped server's data dir can simply be copied.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("--out is required")
			}
			rev, err := backup(cmd.Context(), dataDir, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "backup of %s at revision %d written to %s\n", dataDir, rev, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", controlplane.DefaultDataDir(), "data dir of the running server")
	cmd.Flags().StringVarP(&out, "out", "o", "", "file to write the backup to (a .tar.gz)")
	return cmd
}

// backup writes the archive to a temporary file beside out and renames it
// into place only once it is complete, so out is never a partial backup.
func backup(ctx context.Context, dataDir, out string) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(out), ".batchlet-backup-*")
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	gz := gzip.NewWriter(tmp)
	tw := tar.NewWriter(gz)
	rev, err := writeSnapshot(ctx, dataDir, tw)
	if err != nil {
		return 0, err
	}
	for _, name := range backupCredentials {
		if err := addFile(tw, dataDir, name); err != nil {
			return 0, err
		}
	}
	for _, c := range []io.Closer{tw, gz} {
		if err := c.Close(); err != nil {
			return 0, fmt.Errorf("backup: %w", err)
		}
	}
	if err := tmp.Sync(); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	return rev, nil
}

// writeSnapshot fetches the store's snapshot from the server and adds it
// to the archive as the store file. The snapshot is spooled to a
// temporary file first: a tar entry needs its size up front.
func writeSnapshot(ctx context.Context, dataDir string, tw *tar.Writer) (int64, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", controlplane.KubeconfigPath(dataDir))
	if err != nil {
		return 0, fmt.Errorf("backup: read the kubeconfig of %s (is `batchlet server --data-dir %s` running?): %w", dataDir, dataDir, err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+apiserver.BackupPath, nil)
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("backup: reach the server of %s: %w", dataDir, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("backup: server answered %s: %s", resp.Status, msg)
	}
	spool, err := os.CreateTemp("", "batchlet-snapshot-*")
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	size, err := io.Copy(spool, resp.Body)
	if err != nil {
		return 0, fmt.Errorf("backup: read the snapshot: %w", err)
	}
	var rev int64
	if _, err := fmt.Sscan(resp.Trailer.Get(apiserver.BackupRevisionHeader), &rev); err != nil {
		return 0, fmt.Errorf("backup: the snapshot ended without its revision (the server failed midway, see its log)")
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: controlplane.StoreFile, Mode: 0o600, Size: size, ModTime: time.Now()}); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if _, err := io.Copy(tw, spool); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	return rev, nil
}

// addFile adds one file of the data dir to the archive.
func addFile(tw *tar.Writer, dir, name string) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), ModTime: time.Now()}); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := tw.Write(b); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}
