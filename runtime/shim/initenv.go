package shim

import (
	"slices"
	"strings"
)

// initStartEnv makes a container init's Go runtime start cheaper: with
// GOMAXPROCS set it neither reads the cgroup's CPU limit nor sets up a P
// per CPU, for a process that only makes mounts and execs
// (docs/runtimes.md, "The container init's start").
var initStartEnv = []string{"GOMAXPROCS=1"}

// InitStart is the argv and environment a container init starts with:
// env (the pod's, without duplicates) plus those of initStartEnv's
// variables the pod does not set itself, and argv plus one more argument
// naming them (comma-separated; empty when none), from which the init's
// PodEnv restores the pod's environment before it execs the command.
// Argv rather than a variable carries the names so that no variable a pod
// may set can change what is removed.
func InitStart(argv, env []string) ([]string, []string) {
	var added []string
	out := append(make([]string, 0, len(env)+len(initStartEnv)), env...)
	for _, kv := range initStartEnv {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(env, func(e string) bool { return envKey(e) == k }) {
			out = append(out, kv)
			added = append(added, k)
		}
	}
	return append(slices.Clip(argv), strings.Join(added, ",")), out
}

// PodEnv is env without the variables added (InitStart's last argument
// names them).
func PodEnv(env []string, added string) []string {
	if added == "" {
		return env
	}
	names := strings.Split(added, ",")
	return slices.DeleteFunc(slices.Clone(env), func(e string) bool { return slices.Contains(names, envKey(e)) })
}

func envKey(kv string) string {
	k, _, _ := strings.Cut(kv, "=")
	return k
}
