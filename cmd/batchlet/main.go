// Command batchlet runs Kubernetes batch Jobs and JobSets on one machine.
package main

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/batchlet/batchlet/cli"
	"github.com/batchlet/batchlet/controlplane/memtarget"
)

// gcPercent is the GC target unless GOGC says otherwise: every pod's
// lifecycle makes short-lived garbage (requests, encodings, copies), and
// collecting at 200% of the live heap instead of Go's 100% takes about a
// tenth off the control plane's CPU for about a third more memory
// (docs/benchmarks.md).
const gcPercent = 200

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// While the live heap is small, keep the process under
		// memtarget.DefaultTarget (docs/scaling.md); GOMEMLIMIT is the
		// user's own limit instead.
		go memtarget.New(memtarget.DefaultTarget).Run(context.Background(), memtarget.DefaultInterval)
	}
	os.Exit(cli.Main(os.Args[1:]))
}
