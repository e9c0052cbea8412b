package bolt

import (
	"os"
	"syscall"
)

// fdatasync flushes the file's data (and the size it needs) to disk.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
