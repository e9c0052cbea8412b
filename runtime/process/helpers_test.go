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
