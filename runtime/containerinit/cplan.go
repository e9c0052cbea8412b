package containerinit

import (
	"strconv"
	"strings"
)

// CPlanVersion starts a plan; the C init (runtime/containerinit/cinit)
// runs only plans of its own version.
const CPlanVersion = "cinit1"

// CPlan is spec in the pre-parsed form the C container init reads
// (runtime/containerinit/cinit: linked into batchlet-shim, it runs before
// the Go runtime starts and execs the command without one), or ok false
// when that init does not handle spec: an image container (its root, its
// user and group names), a capability the Go init refuses, no command.
// Everything the Go init derives from spec alone is derived here (the
// capability set, the hidden paths, where the mounts' sources are seen,
// the messages' quoted strings), so the C init does only the system calls
// and what depends on the files it finds (mount points, /etc/passwd and
// /etc/group, PATH). The plan travels as argv[2] beside the JSON; the Go
// init ignores it.
//
// The encoding is a list of strings, each its length in decimal, a colon
// and its bytes: simple to read in C and free of escaping.
func CPlan(spec Spec) (string, bool) {
	if spec.Rootfs != "" || spec.User != "" || len(spec.Argv) == 0 || spec.Pid != 0 {
		return "", false
	}
	keep, err := capSet(spec)
	if err != nil {
		return "", false
	}
	var caps uint64
	for n := range keep {
		if n >= 0 && n < 64 {
			caps |= 1 << n
		}
	}
	var b planWriter
	b.str(CPlanVersion)
	b.str(spec.Hostname)
	b.str(strconv.Quote(spec.Hostname))
	b.str(spec.WorkDir)
	b.str(strconv.Quote(spec.WorkDir))
	b.bool(spec.NoNewPrivs)
	b.str(strconv.FormatUint(caps, 10))
	uid := int64(0)
	if spec.RunAsUser != nil {
		uid = *spec.RunAsUser
	}
	b.int(uid)
	if spec.RunAsGroup != nil {
		b.str(strconv.FormatInt(*spec.RunAsGroup, 10))
	} else {
		b.str("")
	}
	b.int(int64(len(spec.Groups)))
	for _, g := range spec.Groups {
		b.int(g)
	}
	b.bool(needsHostTmp(spec.Mounts))
	b.int(int64(len(spec.Mounts)))
	for _, m := range spec.Mounts {
		b.str(m.Source)
		b.str(InPod(m.Source))
		b.str(m.Target)
		b.bool(m.ReadOnly)
	}
	hidden := hiddenPaths(spec.Hide)
	b.int(int64(len(hidden)))
	for _, h := range hidden {
		b.str(h)
	}
	b.int(int64(len(spec.Keep)))
	for _, k := range spec.Keep {
		b.str(k)
	}
	b.int(int64(len(spec.Argv)))
	for _, a := range spec.Argv {
		b.str(a)
	}
	b.str(strconv.Quote(spec.Argv[0]))
	return b.String(), true
}

// planWriter writes a plan's strings.
type planWriter struct{ strings.Builder }

func (w *planWriter) str(s string) {
	w.WriteString(strconv.Itoa(len(s)))
	w.WriteByte(':')
	w.WriteString(s)
}

func (w *planWriter) int(n int64) { w.str(strconv.FormatInt(n, 10)) }

func (w *planWriter) bool(v bool) {
	if v {
		w.str("1")
	} else {
		w.str("0")
	}
}

// initAdded is the init's argument naming the variables added for the Go
// runtime's start (shim.InitStart), after the spec and, when present, the
// plan: argv is [Arg0, spec] or [Arg0, spec, added] or [Arg0, spec, plan,
// added].
func initAdded(args []string) []string {
	if len(args) == 4 {
		return args[3:]
	}
	return args[2:]
}
