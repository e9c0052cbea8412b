package cli

import (
	"bytes"
	"os"
	"testing"
)

func TestOutputMode(t *testing.T) {
	var buf bytes.Buffer
	cases := []struct {
		flag, want, wantErr string
	}{
		{"auto", "plain", ""}, // not a terminal
		{"", "plain", ""},
		{"tui", "tui", ""},
		{"plain", "plain", ""},
		{"json", "json", ""},
		{"yaml", "", `--output must be auto, tui, plain or json, not "yaml"`},
	}
	for _, tc := range cases {
		got, err := outputMode(tc.flag, &buf)
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
			t.Errorf("outputMode(%q) = %q, %v; want %q, %q", tc.flag, got, err, tc.want, tc.wantErr)
		}
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, _ := outputMode("auto", f); got != "plain" {
		t.Errorf("auto on a file = %q, want plain", got)
	}
}
