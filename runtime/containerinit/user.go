package containerinit

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ids are the credentials the command runs with.
type ids struct {
	uid, gid int64
	groups   []int64
	home     string
}

// resolveUser works out the container's user as runc does from the
// image's user and the securityContext, reading the image's /etc/passwd and
// /etc/group (the root is the container's by now): a name must exist
// there; a numeric uid need not; the primary group defaults to the user's
// passwd entry, else 0; the user's groups in /etc/group are added.
func resolveUser(spec Spec) (ids, error) {
	userPart, groupPart, _ := strings.Cut(spec.User, ":")
	var out ids
	var name string
	pw, pwErr := readColonFile("/etc/passwd")
	switch {
	case spec.RunAsUser != nil:
		out.uid = *spec.RunAsUser
	case userPart == "":
		out.uid = 0
	default:
		if n, err := strconv.ParseInt(userPart, 10, 64); err == nil {
			out.uid = n
			break
		}
		e, ok := findEntry(pw, 0, userPart)
		if !ok {
			return out, fmt.Errorf("unable to find user %s: no matching entries in passwd file", userPart)
		}
		out.uid, _ = strconv.ParseInt(e[2], 10, 64)
	}
	// The passwd entry of the uid gives the name, home and primary group.
	gid := int64(0)
	if pwErr == nil {
		if e, ok := findEntry(pw, 2, strconv.FormatInt(out.uid, 10)); ok && len(e) >= 6 {
			name, out.home = e[0], e[5]
			gid, _ = strconv.ParseInt(e[3], 10, 64)
		}
	}
	gr, _ := readColonFile("/etc/group")
	switch {
	case spec.RunAsGroup != nil:
		gid = *spec.RunAsGroup
	case groupPart != "":
		if n, err := strconv.ParseInt(groupPart, 10, 64); err == nil {
			gid = n
		} else if e, ok := findEntry(gr, 0, groupPart); ok {
			gid, _ = strconv.ParseInt(e[2], 10, 64)
		} else {
			return out, fmt.Errorf("unable to find group %s: no matching entries in group file", groupPart)
		}
	}
	out.gid = gid
	out.groups = append(out.groups, gid)
	if name != "" {
		for _, e := range gr {
			if len(e) < 4 {
				continue
			}
			for _, member := range strings.Split(e[3], ",") {
				if member == name {
					if g, err := strconv.ParseInt(e[2], 10, 64); err == nil {
						out.groups = append(out.groups, g)
					}
				}
			}
		}
	}
	out.groups = append(out.groups, spec.Groups...)
	return out, nil
}

// readColonFile reads /etc/passwd-style lines as fields.
func readColonFile(path string) ([][]string, error) {
	b, err := readSmallFile(path)
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Split(line, ":"))
	}
	return out, nil
}

// readSmallFile reads path with plain system calls: os.Open would first
// set up Go's network poller (an epoll instance, an eventfd, their
// registration and a refused one for the file) in a process that reads two
// small files and execs.
func readSmallFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(fd, buf)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
}

// findEntry returns the first entry whose field i is v.
func findEntry(entries [][]string, i int, v string) ([]string, bool) {
	for _, e := range entries {
		if len(e) > 3 && e[i] == v {
			return e, true
		}
	}
	return nil, false
}
