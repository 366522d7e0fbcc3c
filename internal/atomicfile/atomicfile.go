// Package atomicfile writes files atomically: readers, and a process
// killed in the middle (even with SIGKILL), see the old file or the new
// one, never part of one. It is the one writer of every file hotbudget
// writes: reports, converted profiles, perfassert's baselines.
//
// The data goes to a temporary file in the destination's directory, named
// ".NAME.PID-RANDOM.tmp" after the destination NAME and the writing
// process, and is synced and renamed over the destination only once it is
// complete. A writer killed before the rename leaves its temporary file
// behind, where `git add -A` would pick it up; the next Write of the same
// destination removes every such file whose process is gone (or that is a
// day old), and so does Clean.
//
// The new file gets the permissions of the file it replaces, or, for a new
// file, 0666 less the process's umask, as os.Create gives. A symlink at the
// destination is replaced, not written through.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// staleAge is the age after which a temporary file is stale whoever wrote it.
const staleAge = 24 * time.Hour

// maxStem bounds the part of the destination's name in the temporary
// file's, so that the temporary name stays within a file system's 255 bytes.
const maxStem = 200

// Write writes path with write, atomically. Errors name path, never the
// temporary file.
func Write(path string, write func(f *os.File) error) error {
	dir, prefix := tmpPrefix(path)
	Clean(path)
	var f *os.File
	var err error
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(rand.Uint64(), 36)+".tmp")
		// 0666: the umask applies, as for os.Create.
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the temporary file's name means nothing to the user
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == tmp {
			err = pe.Err
		}
		var le *os.LinkError
		if errors.As(err, &le) {
			err = le.Err
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := write(f); err != nil {
		return fail(err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		if err := f.Chmod(fi.Mode().Perm()); err != nil {
			return fail(err)
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	return nil
}

// tmpPrefix is the directory of path and the start of its temporary
// files' names: ".NAME.".
func tmpPrefix(path string) (dir, prefix string) {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	return dir, "." + name[:min(len(name), maxStem)] + "."
}

// Clean removes the temporary files that writers of path killed before
// their rename left behind: ".NAME.*.tmp" files of a process that is gone,
// and any a day old (".NAME.tmpDIGITS" too, an older version's). A temporary file of a live process is kept: it may be
// writing. Errors are ignored: cleaning is a courtesy.
func Clean(path string) {
	dir, prefix := tmpPrefix(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		mid, ok := strings.CutPrefix(name, prefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if m, ok := strings.CutSuffix(mid, ".tmp"); ok {
			mid = m
		} else if digits, ok := strings.CutPrefix(mid, "tmp"); ok && digits != "" && strings.Trim(digits, "0123456789") == "" {
			mid = "" // an older hotbudget command's ".NAME.tmpDIGITS"
		} else {
			continue
		}
		// Ours are ".NAME.PID-RANDOM.tmp"; any other ".NAME.*.tmp" (an
		// older hotbudget's) is stale by age alone.
		stale := false
		if pid, _, ok := strings.Cut(mid, "-"); ok && !strings.Contains(mid, ".") {
			if n, err := strconv.Atoi(pid); err == nil && n > 0 && n != os.Getpid() && !alive(n) {
				stale = true
			}
		}
		if !stale {
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleAge {
				stale = true
			}
		}
		if stale {
			os.Remove(filepath.Join(dir, name))
		}
	}
}
