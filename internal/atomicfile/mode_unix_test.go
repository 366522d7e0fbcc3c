//go:build unix

package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A new file is 0666 less the umask, as os.Create makes it; a replaced file
// keeps its permissions.
func TestWriteMode(t *testing.T) {
	dir := t.TempDir()
	for _, umask := range []int{0o022, 0o077, 0o002} {
		old := syscall.Umask(umask)
		path := filepath.Join(dir, "new-"+strconv.FormatInt(int64(umask), 8))
		err := Write(path, writeString("x"))
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := fs.FileMode(0o666 &^ umask); fi.Mode().Perm() != want {
			t.Errorf("umask %03o: new file mode %v, want %v", umask, fi.Mode().Perm(), want)
		}
	}
	for _, mode := range []fs.FileMode{0o600, 0o755, 0o640} {
		path := filepath.Join(dir, "old-"+mode.String())
		if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if err := Write(path, writeString("new")); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode || readFile(t, path) != "new" {
			t.Errorf("replaced file: mode %v, want %v", fi.Mode().Perm(), mode)
		}
	}
}
