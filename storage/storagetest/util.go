package storagetest

import (
	"sort"
	"strconv"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func sortedNames[T any](m map[string]T) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
