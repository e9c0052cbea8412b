package process

import (
	"os"
	"testing"
)

func hostnameOf(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// withTestShims sets how the tests' runtimes run shims: with
// BATCHLET_TEST_SHIM_SUPERVISOR=1 every test runs its containers under the
// node's shim supervisor (go test runs them with a shim each).
func withTestShims(cfg Config) Config {
	if os.Getenv("BATCHLET_TEST_SHIM_SUPERVISOR") == "1" {
		cfg.ShimSupervisor = true
	}
	return cfg
}
