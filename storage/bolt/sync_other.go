//go:build !linux

package bolt

import "os"

func fdatasync(f *os.File) error { return f.Sync() }

func preallocate(*os.File, int64) error { return nil }

// inMemoryFS: not detected here.
func inMemoryFS(string) bool { return false }
