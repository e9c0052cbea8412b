//go:build cgo && linux

package cinit

// The constructor is in cinit.c. A static link spares each container the
// dynamic loader's start (loading and relocating libc), which would cost
// a good part of what skipping the Go runtime saves.

/*
#cgo LDFLAGS: -static
#include <stdio.h>
#include "errtext.h"
#include "trim.h"
#include <stdlib.h>
*/
import "C"

import "unsafe"

// Enabled reports whether this build has the C init.
const Enabled = true

// errText is the C init's text of errno e.
func errText(e int) string { return C.GoString(C.go_errtext(C.int(e))) }

// trimSpace is the C init's strings.TrimSpace.
func trimSpace(s string) string {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	b, e := cs, (*C.char)(unsafe.Add(unsafe.Pointer(cs), len(s)))
	C.trim_space(&b, &e)
	return C.GoStringN(b, C.int(uintptr(unsafe.Pointer(e))-uintptr(unsafe.Pointer(b))))
}
