// Package input is how hotbudget's commands read the files they are given:
// shell patterns expanded, every profile through the loaders' bounds
// (HOTBUDGET_MAX_BYTES, the memory budget), several at once within one
// memory budget, and each loader warning said once.
package input

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/loaders"
)

// Reader reads profiles for the command Cmd, writing loader warnings to
// Stderr, a line each.
type Reader struct {
	Stderr io.Writer
	Cmd    string
}

// Profile reads a profile and prints its loader warnings.
func (r Reader) Profile(path string, opts ...loaders.Option) (*profile.Profile, error) {
	p, err := loaders.Load(path, opts...)
	if err != nil {
		return nil, err
	}
	for _, w := range loaders.Warnings(p) {
		fmt.Fprintf(r.Stderr, "hotbudget %s: warning: %s: %s\n", r.Cmd, textfmt.Line(path), textfmt.Line(w))
	}
	return p, nil
}

// Index reads and indexes a profile (loaders.LoadIndex: a Go profile is
// decoded straight into the Index) and prints its loader warnings to
// stderr.
func (r Reader) Index(path string, opts ...loaders.Option) (*analysis.Index, error) {
	x, err := loaders.LoadIndex(path, opts...)
	if err != nil {
		return nil, err
	}
	for _, w := range x.Warnings() {
		fmt.Fprintf(r.Stderr, "hotbudget %s: warning: %s: %s\n", r.Cmd, textfmt.Line(path), textfmt.Line(w))
	}
	return x, nil
}

// Profiles expands globs and loads every profile. A warning that several
// files share is printed once, naming the first file and how many more.
func (r Reader) Profiles(paths []string, opts ...loaders.Option) ([]*profile.Profile, error) {
	files, err := Globs(paths)
	if err != nil {
		return nil, err
	}
	ps, warnings, err := loadFiles(files, func(f string) (*profile.Profile, []string, error) {
		p, err := loaders.Load(f, opts...)
		if err != nil {
			return nil, nil, err
		}
		return p, loaders.Warnings(p), nil
	})
	if err != nil {
		return nil, err
	}
	r.printWarnings(files, warnings)
	return ps, nil
}

// Indexes expands the globs of each list of paths and indexes every
// profile (loaders.LoadIndex: Go profiles are decoded straight into the
// Index), all lists at once, then prints each list's warnings as Profiles
// does.
func (r Reader) Indexes(opts []loaders.Option, lists ...[]string) ([][]*analysis.Index, error) {
	var files []string
	var ends []int
	for _, paths := range lists {
		fs, err := Globs(paths)
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
		ends = append(ends, len(files))
	}
	xs, warnings, err := loadFiles(files, func(f string) (*analysis.Index, []string, error) {
		x, err := loaders.LoadIndex(f, opts...)
		if err != nil {
			return nil, nil, err
		}
		return x, x.Warnings(), nil
	})
	if err != nil {
		return nil, err
	}
	out := make([][]*analysis.Index, len(lists))
	start := 0
	for i, end := range ends {
		out[i] = xs[start:end:end]
		r.printWarnings(files[start:end], warnings[start:end])
		start = end
	}
	return out, nil
}

// loadFiles loads every file with load, several at once (as many as there
// are processors, and only as many as fit together in the memory budget
// of loadBudget), and returns them in order with each file's loader
// warnings; the error is the first file's in order.
func loadFiles[T any](files []string, load func(string) (T, []string, error)) ([]T, [][]string, error) {
	return loadFilesWithin(files, runtime.GOMAXPROCS(0), loadBudget(), loadCost, load)
}

// loadFilesWithin is loadFiles with workers goroutines, a budget of bytes
// (0: none) and the cost of loading a file.
func loadFilesWithin[T any](files []string, workers int, budget int64, cost func(string) int64,
	load func(string) (T, []string, error)) ([]T, [][]string, error) {
	out := make([]T, len(files))
	warnings := make([][]string, len(files))
	errs := make([]error, len(files))
	sem := newByteSem(budget)
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				w := sem.acquire(cost(files[i]))
				out[i], warnings[i], errs[i] = load(files[i])
				sem.release(w)
			}
		}()
	}
	for i := range files {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return out, warnings, nil
}

// loadBudget is how much memory the loads that run at once may take
// together, as loadCost estimates it: what one load may take
// (membudget.ForLimit of the loaders' limit, membudget.InputLimit); 0 when
// there is no limit.
func loadBudget() int64 {
	limit, err := membudget.InputLimit(0)
	if err != nil {
		return 0
	}
	if m := membudget.ForLimit(limit); m != nil {
		return m.Max
	}
	return 0
}

// loadCost estimates the memory that loading the file at path takes,
// before reading it: its decompressed size (the size on disk, or a gzip
// file's trailer, whichever is more) times what parsing ordinary profiles
// takes per byte. A trailer that lies only lets a file load beside
// others: each load is bounded by its own budget as it reads.
func loadCost(path string) int64 {
	const perByte = membudget.Ratio / 2
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	n := fi.Size()
	var b [4]byte
	if _, err := f.ReadAt(b[:2], 0); err == nil && b[0] == 0x1f && b[1] == 0x8b && n >= 18 {
		if _, err := f.ReadAt(b[:], n-4); err == nil {
			n = max(n, int64(binary.LittleEndian.Uint32(b[:])))
		}
	}
	return min(n, math.MaxInt64/perByte) * perByte
}

// byteSem is a semaphore of bytes: acquire waits until the weight fits
// beside what others hold. A weight larger than the whole budget waits
// until nothing else is held. A nil byteSem never waits.
type byteSem struct {
	mu   sync.Mutex
	cond *sync.Cond
	size int64
	held int64
}

func newByteSem(size int64) *byteSem {
	if size <= 0 {
		return nil
	}
	s := &byteSem{size: size}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// acquire takes w bytes (at most the whole budget) and returns what it took.
func (s *byteSem) acquire(w int64) int64 {
	if s == nil {
		return 0
	}
	w = min(max(w, 0), s.size)
	s.mu.Lock()
	for s.held+w > s.size {
		s.cond.Wait()
	}
	s.held += w
	s.mu.Unlock()
	return w
}

func (s *byteSem) release(w int64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.held -= w
	s.mu.Unlock()
	s.cond.Broadcast()
}

// printWarnings prints the loader warnings of files. A warning that
// several files share is printed once, naming the first file and how many
// more.
func (r Reader) printWarnings(files []string, warnings [][]string) {
	var order []string
	where := map[string][]string{}
	for i, f := range files {
		for _, w := range warnings[i] {
			if where[w] == nil {
				order = append(order, w)
			}
			where[w] = append(where[w], f)
		}
	}
	for _, w := range order {
		fs := where[w]
		name := fs[0]
		if len(fs) > 1 {
			name = fmt.Sprintf("%s and %d more", fs[0], len(fs)-1)
		}
		fmt.Fprintf(r.Stderr, "hotbudget %s: warning: %s: %s\n", r.Cmd, textfmt.Line(name), textfmt.Line(w))
	}
}

// Globs expands shell patterns among paths (for shells and CI
// systems that pass them unexpanded); a pattern that matches nothing is an error.
func Globs(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if !strings.ContainsAny(p, "*?[") {
			out = append(out, p)
			continue
		}
		if _, err := os.Stat(p); err == nil { // a real file with a strange name
			out = append(out, p)
			continue
		}
		m, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("bad pattern %q: %w", p, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no files match", p)
		}
		sort.Strings(m)
		out = append(out, m...)
	}
	return out, nil
}
