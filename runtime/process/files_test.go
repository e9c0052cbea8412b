package process

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestReadUmask(t *testing.T) {
	for _, tc := range []struct {
		name, status string
		want         uint32
		wantErr      bool
	}{
		{name: "typical", status: "Name:\tbatchlet\nUmask:\t0022\nState:\tS (sleeping)\n", want: 0o022},
		{name: "strict", status: "Umask:\t0077\n", want: 0o077},
		{name: "none", status: "Umask:\t0000\n", want: 0},
		{name: "old kernel without the line", status: "Name:\tbatchlet\n", wantErr: true},
		{name: "garbage", status: "Umask:\tx\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "status")
			if err := os.WriteFile(path, []byte(tc.status), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readUmask(path)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("readUmask = %#o, %v; want %#o, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// The umask of this process is what newFileWriter reads.
func TestNewFileWriterReadsTheUmask(t *testing.T) {
	withUmask(t, 0o027)
	if w := newFileWriter(); !w.umaskKnown || w.umask != 0o027 {
		t.Errorf("fileWriter = %+v, want umask 027 known", w)
	}
}

// writeFileMode leaves exactly the mode asked for, whatever the umask and
// whether the file existed; createFile refuses a file that exists.
func TestWriteFileModeIsExact(t *testing.T) {
	withUmask(t, 0o077)
	for _, w := range []fileWriter{newFileWriter(), {}} {
		dir := t.TempDir()
		path := filepath.Join(dir, "f")
		for i, mode := range []os.FileMode{0o644, 0o400, 0o666} {
			if err := w.writeFileMode(path, []byte{byte('a' + i)}, mode); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(path); st.Mode() != mode || string(b) != string(rune('a'+i)) {
				t.Errorf("umaskKnown=%v write %d: mode %v content %q, want %v %q", w.umaskKnown, i, st.Mode(), b, mode, string(rune('a'+i)))
			}
		}
		if err := w.createFile(path, nil, 0o644, -1, -1); !errors.Is(err, fs.ErrExist) {
			t.Errorf("createFile of an existing file: %v, want ErrExist", err)
		}
	}
}

// writeFile is os.WriteFile: the umask applies.
func TestWriteFileTakesTheUmask(t *testing.T) {
	withUmask(t, 0o077)
	path := filepath.Join(t.TempDir(), "hosts")
	if err := newFileWriter().writeFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode() != 0o600 {
		t.Errorf("mode = %v, want -rw-------", st.Mode())
	}
}
