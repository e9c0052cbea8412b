// Command batchlet runs Kubernetes batch Jobs and JobSets on one machine.
package main

import (
	"os"

	"github.com/batchlet/batchlet/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
