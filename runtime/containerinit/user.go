package containerinit

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
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
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Split(line, ":"))
	}
	return out, sc.Err()
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
