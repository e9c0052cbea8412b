// Command pause is the pause image's entrypoint for hack/upstream-e2e: it
// does nothing until SIGTERM or SIGINT, then exits 0, as
// registry.k8s.io/pause does when it runs as a container's PID 1.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
