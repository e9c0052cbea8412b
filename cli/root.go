// Package cli holds batchlet's command-line interface: one cobra command per
// role (run, wait, server, agent, kubeconfig, bench, ...).
package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// Main runs the command line and returns the process exit code.
func Main(args []string) int {
	root := newRootCommand()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		var ec exitCoder
		if asExitCoder(err, &ec) {
			return ec.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "batchlet",
		Short:         "Run Kubernetes batch Jobs and JobSets on one machine",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCommand(), newServerCommand(), newKubeconfigCommand(), newBenchCommand(), newAgentCommand(), newControllersCommand())
	root.AddCommand(newCRDsCommand(), newInstallCommand())
	root.AddCommand(newImagesCommand(), newWaitCommand(), newWatchCommand(), newResultsCommand(), newBackupCommand(), newRerunCommand(), newTokenCommand(), newDashboardCommand())
	return root
}
