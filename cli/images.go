package cli

import (
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/spf13/cobra"

	"github.com/batchlet/batchlet/controlplane"
	"github.com/batchlet/batchlet/runtime/image"
)

// imageStoreDir is where a data dir keeps its images.
func imageStoreDir(dataDir string) string { return filepath.Join(dataDir, "images") }

func newImagesCommand() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Manage the image store of the image runtime (load, pull, list, rm, gc)",
		Long: `Images manages <data-dir>/images, the content-addressed store the image
runtime (batchlet server --runtime=image) runs containers from. It can be
used while the server runs.

  batchlet images load busybox.tar          # docker save output, or an OCI layout (dir or tar)
  batchlet images load app.tar --name registry.example.com/app:1
  batchlet images pull 127.0.0.1:5000/app:1
  batchlet images list
  batchlet images rm registry.example.com/app:1`,
	}
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", controlplane.DefaultDataDir(), "data dir whose image store to use")
	open := func() (*image.Store, error) { return image.Open(imageStoreDir(dataDir)) }
	cmd.AddCommand(newImagesLoadCommand(open), newImagesPullCommand(open), newImagesListCommand(open),
		newImagesRmCommand(open), newImagesGCCommand(open))
	return cmd
}

type storeOpener func() (*image.Store, error)

func newImagesLoadCommand(open storeOpener) *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "load FILE",
		Short: "Import the images of a docker-save tarball or an OCI image layout (directory or tar)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			loaded, err := s.Load(args[0], as)
			for _, ref := range loaded {
				fmt.Fprintf(cmd.OutOrStdout(), "Loaded image: %s\n", ref)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&as, "name", "", "name for the archive's single image (instead of the name in the archive)")
	return cmd
}

func newImagesPullCommand(open storeOpener) *cobra.Command {
	var mirrors []string
	cmd := &cobra.Command{
		Use:   "pull IMAGE",
		Short: "Pull an image into the store (credentials from the docker config)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := image.ParseReference(args[0])
			if err != nil {
				return err
			}
			m, err := image.ParseMirrors(mirrors)
			if err != nil {
				return err
			}
			s, err := open()
			if err != nil {
				return err
			}
			img, err := s.Pull(cmd.Context(), ref, authn.DefaultKeychain, m)
			if err != nil {
				return fmt.Errorf("pull %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Pulled image: %s@%s (%d bytes)\n", img.Ref, img.Digest, img.Size)
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&mirrors, "registry-mirror", nil, "pull REGISTRY's images from MIRROR instead (REGISTRY=MIRROR, repeatable)")
	return cmd
}

func newImagesListCommand(open storeOpener) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the stored images",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			list, err := s.List()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 3, ' ', 0)
			fmt.Fprintln(tw, "IMAGE\tDIGEST\tIMAGE ID\tSIZE")
			for _, i := range list {
				ref := i.Ref
				if ref == "" {
					ref = "<none>"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ref, i.Digest, i.ID.Hex[:13], humanSize(i.Size))
			}
			return tw.Flush()
		},
	}
}

func newImagesRmCommand(open storeOpener) *cobra.Command {
	return &cobra.Command{
		Use:   "rm IMAGE...",
		Short: "Remove images (by name, digest or digest prefix) and what only they used",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			for _, a := range args {
				removed, err := s.Remove(a)
				for _, r := range removed {
					fmt.Fprintf(cmd.OutOrStdout(), "Deleted: %s\n", r)
				}
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func newImagesGCCommand(open storeOpener) *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Remove the blobs and unpacked layers no stored image references",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := open()
			if err != nil {
				return err
			}
			res, err := s.GC()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Removed %d blobs and %d unpacked layers\n", res.Blobs, res.Layers)
			if res.LayersSkipped {
				fmt.Fprintln(cmd.OutOrStdout(), "Unpacked layers were left alone: a running batchlet uses them and collects them itself")
			}
			return nil
		},
	}
}

// humanSize formats bytes as crictl does (kB, MB, GB; powers of 1000).
func humanSize(n int64) string {
	units := []string{"B", "kB", "MB", "GB", "TB"}
	f := float64(n)
	i := 0
	for f >= 1000 && i < len(units)-1 {
		f /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%dB", n)
	}
	return fmt.Sprintf("%.3g%s", f, units[i])
}
