//go:build !cgo || !linux || !amd64

package cspawn

import "syscall"

// Available reports whether this build has the C start.
const Available = false

// Spawner is unavailable in this build.
type Spawner struct{}

// New fails: this build has no C start.
func New() (*Spawner, error) { return nil, syscall.ENOSYS }

// Close does nothing.
func (s *Spawner) Close() {}

// Start never starts anything here.
func (s *Spawner) Start(path string, argv []string, attr Attr) (pid int, ok bool, err error) {
	return 0, false, nil
}
