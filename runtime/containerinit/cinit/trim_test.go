//go:build cgo && linux

package cinit

import (
	"strings"
	"testing"
)

// TestTrimSpace checks the C init's trimming of /etc/passwd and /etc/group
// lines against Go's strings.TrimSpace.
func TestTrimSpace(t *testing.T) {
	for _, s := range []string{"", " ", "a", " \t\v\f\r a:b \n", "\u00a0root:x:0\u3000", "\u0085a\u2028\u2029\u202f\u205f\u1680",
		"\u2000\u200a\u200bx\u200b", "\xe2\x80\x7fa", "a\xc2", "\xc2\xa0", "é", "x\u00e9\u00a0"} {
		if got, want := trimSpace(s), strings.TrimSpace(s); got != want {
			t.Errorf("trim %q: C %q, Go %q", s, got, want)
		}
	}
}
