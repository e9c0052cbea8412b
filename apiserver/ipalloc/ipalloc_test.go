package ipalloc

import (
	"errors"
	"net/netip"
	"testing"
)

func TestAllocate(t *testing.T) {
	addr := netip.MustParseAddr
	cases := map[string]struct {
		cidr      string
		requested string
		inUse     []string
		want      string
		wantErr   string
	}{
		"requested first address":            {cidr: "10.96.0.0/12", requested: "10.96.0.1", want: "10.96.0.1"},
		"requested address taken":            {cidr: "10.96.0.0/12", requested: "10.96.0.10", inUse: []string{"10.96.0.10"}, wantErr: "provided IP is already allocated"},
		"requested outside":                  {cidr: "10.96.0.0/12", requested: "10.0.0.10", wantErr: "provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12"},
		"requested network address":          {cidr: "10.96.0.0/12", requested: "10.96.0.0", wantErr: "provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12"},
		"requested broadcast address":        {cidr: "10.96.0.0/12", requested: "10.111.255.255", wantErr: "provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12"},
		"requested last address":             {cidr: "10.96.0.0/12", requested: "10.111.255.254", want: "10.111.255.254"},
		"dynamic skips the static band":      {cidr: "10.96.0.0/12", inUse: []string{"10.96.0.1"}, want: "10.96.1.1"},
		"dynamic takes the lowest free":      {cidr: "10.96.0.0/12", inUse: []string{"10.96.1.1", "10.96.1.2"}, want: "10.96.1.3"},
		"small range band is 16":             {cidr: "10.0.0.0/24", want: "10.0.0.17"},
		"tiny range has no static band":      {cidr: "10.0.0.0/29", inUse: []string{"10.0.0.1", "10.0.0.2"}, want: "10.0.0.3"},
		"dynamic falls back to static band":  {cidr: "10.0.0.0/27", inUse: []string{"10.0.0.17", "10.0.0.18", "10.0.0.19", "10.0.0.20", "10.0.0.21", "10.0.0.22", "10.0.0.23", "10.0.0.24", "10.0.0.25", "10.0.0.26", "10.0.0.27", "10.0.0.28", "10.0.0.29", "10.0.0.30"}, want: "10.0.0.1"},
		"full":                               {cidr: "10.0.0.0/30", inUse: []string{"10.0.0.1", "10.0.0.2"}, wantErr: "range is full"},
		"band upper edge from a /24 is free": {cidr: "10.0.0.0/24", inUse: []string{"10.0.0.17"}, want: "10.0.0.18"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := NewRange(tc.cidr)
			if err != nil {
				t.Fatal(err)
			}
			used := map[netip.Addr]bool{}
			for _, s := range tc.inUse {
				used[addr(s)] = true
			}
			var req netip.Addr
			if tc.requested != "" {
				req = addr(tc.requested)
			}
			got, err := r.Allocate(req, func(a netip.Addr) bool { return used[a] })
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Fatalf("Allocate = %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestNewRange(t *testing.T) {
	cases := map[string]struct {
		cidr      string
		wantFirst string
		wantErr   bool
	}{
		"kubeadm default":       {cidr: "10.96.0.0/12", wantFirst: "10.96.0.1"},
		"unmasked is masked":    {cidr: "10.96.3.4/12", wantFirst: "10.96.0.1"},
		"IPv6 is not supported": {cidr: "fd00::/108", wantErr: true},
		"too small":             {cidr: "10.0.0.0/31", wantErr: true},
		"garbage":               {cidr: "ten", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := NewRange(tc.cidr)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err == nil && r.First().String() != tc.wantFirst {
				t.Errorf("First = %s, want %s", r.First(), tc.wantFirst)
			}
		})
	}
}

func TestNotInRangeIsTyped(t *testing.T) {
	r, _ := NewRange("10.96.0.0/12")
	_, err := r.Allocate(netip.MustParseAddr("1.2.3.4"), func(netip.Addr) bool { return false })
	var nir *NotInRangeError
	if !errors.As(err, &nir) || nir.Range.String() != "10.96.0.0/12" {
		t.Errorf("err = %v, want NotInRangeError for 10.96.0.0/12", err)
	}
}
