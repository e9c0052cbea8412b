// Command batchlet-shim is the small binary the process runtime runs as
// each container's shim and container init (runtime/shim and
// runtime/containerinit, recognised by argv[0] in their packages' init
// functions), in place of the whole batchlet binary: it links only those
// two packages, the standard library and x/sys, so each start costs a
// fraction of the page faults and runtime start-up of the agent's binary
// (docs/runtimes.md, "Shims"). Built with cgo it also links the C
// container init (runtime/containerinit/cinit), which starts host
// containers before the Go runtime starts at all ("The C init"). The agent
// uses it when it lies beside its own executable and comes from the same
// build; otherwise the agent runs itself in its place.
package main

import (
	"fmt"
	"os"

	_ "github.com/batchlet/batchlet/runtime/containerinit"
	_ "github.com/batchlet/batchlet/runtime/containerinit/cinit"
	_ "github.com/batchlet/batchlet/runtime/shim"
)

func main() {
	// Reached only when argv[0] names neither role.
	fmt.Fprintln(os.Stderr, "batchlet-shim: run by the batchlet agent for each container; not a command")
	os.Exit(2)
}
