package containerinit

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestCapSet(t *testing.T) {
	cases := []struct {
		name    string
		spec    Spec
		has     []int
		hasNot  []int
		wantLen int
	}{
		{name: "default", spec: Spec{}, has: []int{unix.CAP_CHOWN, unix.CAP_SETUID, unix.CAP_NET_RAW},
			hasNot: []int{unix.CAP_SYS_ADMIN, unix.CAP_SYS_PTRACE, unix.CAP_DAC_READ_SEARCH}, wantLen: len(DefaultCaps)},
		{name: "add and drop", spec: Spec{CapAdd: []string{"NET_ADMIN", "CAP_SYS_TIME"}, CapDrop: []string{"net_raw"}},
			has: []int{unix.CAP_NET_ADMIN, unix.CAP_SYS_TIME}, hasNot: []int{unix.CAP_NET_RAW}, wantLen: len(DefaultCaps) + 1},
		{name: "drop all", spec: Spec{CapDrop: []string{"ALL"}}, wantLen: 0},
		{name: "drop all add one", spec: Spec{CapDrop: []string{"ALL"}, CapAdd: []string{"NET_BIND_SERVICE"}},
			has: []int{unix.CAP_NET_BIND_SERVICE}, wantLen: 1},
		{name: "privileged", spec: Spec{Privileged: true, CapDrop: []string{"ALL"}}, has: []int{unix.CAP_SYS_ADMIN}, wantLen: len(capNumbers)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := capSet(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.wantLen {
				t.Errorf("%d capabilities, want %d", len(got), tc.wantLen)
			}
			for _, c := range tc.has {
				if !got[c] {
					t.Errorf("capability %d missing", c)
				}
			}
			for _, c := range tc.hasNot {
				if got[c] {
					t.Errorf("capability %d kept", c)
				}
			}
		})
	}
	if _, err := capSet(Spec{CapAdd: []string{"NOPE"}}); err == nil || err.Error() != `unknown capability "NOPE" to add` {
		t.Errorf("unknown capability: %v", err)
	}
}
