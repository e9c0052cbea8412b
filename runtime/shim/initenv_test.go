package shim

import (
	"slices"
	"testing"
)

func TestInitStartAndPodEnv(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       []string
		wantEnv   []string
		wantAdded string
	}{
		{"none set", []string{"A=1", "PATH=/bin"}, []string{"A=1", "PATH=/bin", "GOMAXPROCS=1"}, "GOMAXPROCS"},
		{"empty env", nil, []string{"GOMAXPROCS=1"}, "GOMAXPROCS"},
		{"pod's own kept", []string{"GOMAXPROCS=7", "A=1"}, []string{"GOMAXPROCS=7", "A=1"}, ""},
		{"pod's empty value kept", []string{"GOMAXPROCS="}, []string{"GOMAXPROCS="}, ""},
		{"similar names", []string{"GOMAXPROCSX=2", "XGOMAXPROCS=3"}, []string{"GOMAXPROCSX=2", "XGOMAXPROCS=3", "GOMAXPROCS=1"}, "GOMAXPROCS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv := []string{"batchlet-container-init", "{}"}
			gotArgv, gotEnv := InitStart(argv, tc.env)
			if want := []string{"batchlet-container-init", "{}", tc.wantAdded}; !slices.Equal(gotArgv, want) {
				t.Fatalf("argv %q, want %q", gotArgv, want)
			}
			if len(argv) != 2 {
				t.Fatalf("caller's argv changed: %q", argv)
			}
			if !slices.Equal(gotEnv, tc.wantEnv) {
				t.Fatalf("env %q, want %q", gotEnv, tc.wantEnv)
			}
			if back := PodEnv(gotEnv, gotArgv[2]); !slices.Equal(back, tc.env) && !(len(back) == 0 && len(tc.env) == 0) {
				t.Fatalf("PodEnv %q, want the pod's %q", back, tc.env)
			}
		})
	}
}
