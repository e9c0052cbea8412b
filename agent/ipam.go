package agent

import (
	"fmt"
	"net"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// IPAllocator hands out pod IPs.
type IPAllocator interface {
	// Allocate returns the pod's IP, reusing preferred when it is free.
	Allocate(uid types.UID, preferred string) (string, error)
	Release(uid types.UID)
}

// loopback allocates 127.1.0.1 ... 127.254.255.254, one per pod.
type loopback struct {
	mu    sync.Mutex
	byUID map[types.UID]uint32
	used  map[uint32]bool
	next  uint32
	// first and last bound the range handed out.
	first, last uint32
}

const (
	loopFirst = 127<<24 | 1<<16 | 1
	loopLast  = 127<<24 | 254<<16 | 255<<8 | 254
)

// NewLoopbackAllocator returns an allocator of distinct loopback addresses.
func NewLoopbackAllocator() IPAllocator { return newLoopbackRange(loopFirst, loopLast) }

func newLoopbackRange(first, last uint32) *loopback {
	return &loopback{byUID: map[types.UID]uint32{}, used: map[uint32]bool{}, next: first, first: first, last: last}
}

func (l *loopback) Allocate(uid types.UID, preferred string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ip, ok := l.byUID[uid]; ok {
		return toIP(ip), nil
	}
	if p := net.ParseIP(preferred).To4(); p != nil {
		v := uint32(p[0])<<24 | uint32(p[1])<<16 | uint32(p[2])<<8 | uint32(p[3])
		if v >= l.first && v <= l.last && !l.used[v] {
			l.take(uid, v)
			return toIP(v), nil
		}
	}
	for range l.last - l.first + 1 {
		v := l.next
		l.next++
		if l.next > l.last {
			l.next = l.first
		}
		if v&0xff == 0 || v&0xff == 255 || l.used[v] {
			continue
		}
		l.take(uid, v)
		return toIP(v), nil
	}
	return "", fmt.Errorf("no free pod IP")
}

func (l *loopback) take(uid types.UID, v uint32) {
	l.byUID[uid] = v
	l.used[v] = true
}

func (l *loopback) Release(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v, ok := l.byUID[uid]; ok {
		delete(l.used, v)
		delete(l.byUID, uid)
	}
}

func toIP(v uint32) string {
	return net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).String()
}
