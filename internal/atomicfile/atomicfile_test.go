package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func writeString(s string) func(*os.File) error {
	return func(f *os.File) error { _, err := f.WriteString(s); return err }
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// names lists dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	if err := Write(path, writeString("one")); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, writeString("two")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "two" {
		t.Errorf("content %q, want two", got)
	}
	if n := names(t, dir); len(n) != 1 {
		t.Errorf("directory holds %q, want out.txt alone", n)
	}
	// A relative path in the working directory.
	t.Chdir(dir)
	if err := Write("rel.txt", writeString("r")); err != nil || readFile(t, "rel.txt") != "r" {
		t.Errorf("relative path: %v", err)
	}
}

// A failed write leaves the old file and no temporary file; errors name
// the destination, not the temporary file.
func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	if err := Write(path, writeString("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, func(f *os.File) error { f.WriteString("partial"); return boom })
	if !errors.Is(err, boom) || err.Error() != path+": boom" {
		t.Errorf("err = %v, want %s: boom", err, path)
	}
	if got := readFile(t, path); got != "old" {
		t.Errorf("content %q after a failed write, want old", got)
	}
	// A directory in the way of the rename.
	blocked := filepath.Join(dir, "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(blocked, writeString("x")); err == nil || strings.Contains(err.Error(), ".tmp") || !strings.HasPrefix(err.Error(), blocked+": ") {
		t.Errorf("rename over a directory: err = %v", err)
	}
	// No directory.
	missing := filepath.Join(dir, "no", "such", "out.txt")
	if err := Write(missing, writeString("x")); !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), ".tmp") {
		t.Errorf("missing directory: err = %v", err)
	}
	if n := names(t, dir); len(n) != 2 {
		t.Errorf("directory holds %q, want out.txt and blocked", n)
	}
}

// A symlink at the destination is replaced, its target left alone.
func TestWriteSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("target"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	if err := Write(link, writeString("new")); err != nil {
		t.Fatal(err)
	}
	if readFile(t, target) != "target" || readFile(t, link) != "new" {
		t.Errorf("target %q, link %q", readFile(t, target), readFile(t, link))
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("link is %v (%v), want a regular file", fi.Mode(), err)
	}
}

// deadPID is the id of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// Stale temporary files of the same destination are removed by the next
// Write: a dead process's, and any a day old; a live process's are kept,
// and so are other destinations'.
func TestWriteCleansStale(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "base.pb.gz")
	dead, live := deadPID(t), os.Getppid()
	tmp := func(name string) string { return filepath.Join(dir, name) }
	files := map[string]bool{ // name: stale
		".base.pb.gz." + strconv.Itoa(dead) + "-abc.tmp":  true,
		".base.pb.gz." + strconv.Itoa(live) + "-abc.tmp":  false,
		".base.pb.gz.123456789.tmp":                       false, // an older hotbudget's, recent
		".base.pb.gz.987654.tmp":                          true,  // an older hotbudget's, two days old
		".base.pb.gz.tmp4242":                             true,  // an older command's, two days old
		".base.pb.gz.tmp4243":                             false,
		".other.pb.gz." + strconv.Itoa(dead) + "-abc.tmp": false,
		".base.pb.gz." + strconv.Itoa(dead) + "-abc.tmpx": false,
		"base.pb.gz." + strconv.Itoa(dead) + "-abc.tmp":   false,
	}
	for name := range files {
		if err := os.WriteFile(tmp(name), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-48 * time.Hour)
	for _, name := range []string{".base.pb.gz.987654.tmp", ".base.pb.gz.tmp4242"} {
		if err := os.Chtimes(tmp(name), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if runtime.GOOS == "windows" {
		files[".base.pb.gz."+strconv.Itoa(dead)+"-abc.tmp"] = false // age alone
	}
	if err := Write(path, writeString("x")); err != nil {
		t.Fatal(err)
	}
	for name, stale := range files {
		_, err := os.Stat(tmp(name))
		if gone := errors.Is(err, fs.ErrNotExist); gone != stale {
			t.Errorf("%s: removed %v, want %v", name, gone, stale)
		}
	}
}

// childEnv makes TestKilledWriter's child write and hang.
const childEnv = "ATOMICFILE_TEST_CHILD"

// TestKilledWriter kills a writer in the middle of its write with SIGKILL:
// the destination keeps its old content, and the temporary file it leaves
// is removed by the next Write.
func TestKilledWriter(t *testing.T) {
	if path := os.Getenv(childEnv); path != "" {
		Write(path, func(f *os.File) error {
			f.WriteString("partial")
			os.Stdout.WriteString("writing\n")
			select {} // killed here
		})
		return
	}
	if runtime.GOOS == "windows" {
		t.Skip("the temporary file of a killed process is stale by age alone")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "base.pb.gz")
	if err := Write(path, writeString("old")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriter$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if _, err := out.Read(buf); err != nil || string(buf[:7]) != "writing" {
		cmd.Process.Kill()
		t.Fatalf("child: %q, %v", buf, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if got := readFile(t, path); got != "old" {
		t.Errorf("after a killed write: %q, want old", got)
	}
	if n := names(t, dir); len(n) != 2 {
		t.Fatalf("after a killed write the directory holds %q, want base.pb.gz and a temporary file", n)
	}
	if err := Write(path, writeString("new")); err != nil {
		t.Fatal(err)
	}
	if n := names(t, dir); len(n) != 1 || readFile(t, path) != "new" {
		t.Errorf("after the next write the directory holds %q, want base.pb.gz alone", n)
	}
}
