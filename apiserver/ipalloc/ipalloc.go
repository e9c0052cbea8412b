// Package ipalloc decides Service ClusterIPs from a service CIDR, as
// kube-apiserver's allocator does: every address of the range except its
// network and broadcast addresses, a requested address must be in the
// range and free, and an unrequested one is picked above the low band
// upstream keeps for requested addresses. It keeps no state: callers pass
// the addresses in use (batchlet derives them from the stored Services, so
// allocations survive restarts and a delete releases its address).
package ipalloc

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrAllocated is upstream's error for a requested address already in use.
var ErrAllocated = errors.New("provided IP is already allocated")

// ErrFull is upstream's error when no address is left.
var ErrFull = errors.New("range is full")

// NotInRangeError is upstream's error for a requested address outside the
// range.
type NotInRangeError struct{ Range netip.Prefix }

func (e *NotInRangeError) Error() string {
	return fmt.Sprintf("provided IP is not in the valid range. The range of valid IPs is %s", e.Range)
}

// Range is the allocatable addresses of an IPv4 service CIDR.
type Range struct {
	prefix netip.Prefix
	base   uint32 // the network address
	size   uint32 // allocatable addresses: base+1 .. base+size
	static uint32 // the first static addresses are only given on request
}

// NewRange parses an IPv4 CIDR such as upstream's default 10.96.0.0/12.
func NewRange(cidr string) (*Range, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("parsing service CIDR: %w", err)
	}
	p = p.Masked()
	if !p.Addr().Is4() {
		return nil, fmt.Errorf("service CIDR %s: only IPv4 ranges are supported", p)
	}
	if p.Bits() > 30 {
		return nil, fmt.Errorf("service CIDR %s: too small, need at least /30", p)
	}
	total := uint64(1) << (32 - p.Bits())
	size := uint32(total - 2)
	return &Range{prefix: p, base: toUint(p.Addr()), size: size, static: staticBand(size)}, nil
}

// staticBand is upstream's reserved low band for requested addresses
// (KEP-3070): size/16, at least 16 and at most 256, and none in tiny ranges.
func staticBand(size uint32) uint32 {
	if size < 16 {
		return 0
	}
	return min(max(16, size/16), 256)
}

// Prefix is the CIDR of the range.
func (r *Range) Prefix() netip.Prefix { return r.prefix }

// First is the range's first address, which upstream gives the
// default/kubernetes Service.
func (r *Range) First() netip.Addr { return toAddr(r.base + 1) }

// Contains says whether a is allocatable (in the CIDR, neither its network
// nor its broadcast address).
func (r *Range) Contains(a netip.Addr) bool {
	if !a.Is4() || !r.prefix.Contains(a) {
		return false
	}
	off := toUint(a) - r.base
	return off >= 1 && off <= r.size
}

// Allocate checks a requested address (when one is given) or picks a free
// one: the lowest free address above the static band, else the lowest free
// one in it. inUse says whether an address is taken.
func (r *Range) Allocate(requested netip.Addr, inUse func(netip.Addr) bool) (netip.Addr, error) {
	if requested.IsValid() {
		if !r.Contains(requested) {
			return netip.Addr{}, &NotInRangeError{Range: r.prefix}
		}
		if inUse(requested) {
			return netip.Addr{}, ErrAllocated
		}
		return requested, nil
	}
	if a, ok := r.firstFree(r.static+1, r.size, inUse); ok {
		return a, nil
	}
	if a, ok := r.firstFree(1, r.static, inUse); ok {
		return a, nil
	}
	return netip.Addr{}, ErrFull
}

// firstFree returns the lowest free address at offsets from..to.
func (r *Range) firstFree(from, to uint32, inUse func(netip.Addr) bool) (netip.Addr, bool) {
	for off := from; off >= 1 && off <= to; off++ {
		if a := toAddr(r.base + off); !inUse(a) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func toUint(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func toAddr(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
