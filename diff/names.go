package diff

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// How functions are matched and named across the two sides: matching keys,
// renames, cleaned file paths, and the error for profiles that share
// nothing.

// key returns the matching key of a function under s.Key, after
// Settings.Rename.
func (s *engine) key(f *analysis.Function) string {
	name := s.name(f.Name)
	switch s.Key {
	case KeyNameFile:
		return name + "\x00" + cleanPath(f.File)
	case KeyNameFileLine:
		return name + "\x00" + cleanPath(f.File) + "\x00" + strconv.FormatInt(f.Line, 10)
	}
	return name
}

// name is a function's name as the report shows it: its new name when
// Settings.Rename renames it.
func (s *engine) name(n string) string {
	if r, ok := s.Rename[n]; ok {
		if s.renamed == nil {
			s.renamed = map[string]bool{}
		}
		s.renamed[n] = true
		return r
	}
	return n
}

// renames fills Row.RenamedFrom and warns of renames that matched no
// function, and of a gone and a new function in the same file, which may
// be one function renamed.
func (s *engine) renames(rep *Report) {
	if len(s.Rename) > 0 {
		from := map[string][]string{}
		for o, n := range s.Rename {
			if s.renamed[o] {
				from[n] = append(from[n], o)
			}
		}
		for i := range rep.Rows {
			if f := from[rep.Rows[i].Name]; f != nil {
				rep.Rows[i].RenamedFrom = slices.Sorted(slices.Values(f))
			}
		}
		for _, o := range slices.Sorted(maps.Keys(s.Rename)) {
			if !s.renamed[o] {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("rename %s → %s: no function %s in either side", o, s.Rename[o], o))
			}
		}
	}
	type pair struct{ gone, new []string }
	files := map[string]*pair{}
	for _, row := range rep.Rows {
		if row.File == "" || (row.Verdict != New && row.Verdict != Gone) {
			continue
		}
		f := cleanPath(row.File)
		p := files[f]
		if p == nil {
			p = &pair{}
			files[f] = p
		}
		if row.Verdict == New {
			p.new = append(p.new, row.Name)
		} else {
			p.gone = append(p.gone, row.Name)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(files)) {
		if p := files[f]; len(p.gone) == 1 && len(p.new) == 1 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf(
				"%s is gone and %s is new, both in %s: if it was renamed, diff.WithRename(%q, %q) judges them as one function", textfmt.Name(p.gone[0]), textfmt.Name(p.new[0]), textfmt.Name(f), textfmt.Name(p.gone[0]), textfmt.Name(p.new[0])))
		}
	}
}

// cleanPath reduces a source file path to the part that survives a change of
// machine, checkout directory or module version: a URL scheme
// ("file:///...") and "@version" suffixes of path elements are dropped, and
// only the last two elements are kept ("/home/runner/work/app/app/internal/
// parse/lex.go" and "/tmp/app/internal/parse/lex.go" both become
// "parse/lex.go"; ".../pkg/mod/example.com/m@v1.2.0/x/y.go" becomes "x/y.go").
func cleanPath(file string) string {
	if file == "" {
		return ""
	}
	if i := strings.Index(file, "://"); i >= 0 {
		file = file[i+3:]
	}
	if i := strings.IndexAny(file, "?#"); i >= 0 {
		file = file[:i]
	}
	file = strings.ReplaceAll(file, `\`, "/")
	elems := strings.Split(path.Clean(file), "/")
	for i, e := range elems {
		if at := strings.Index(e, "@"); at > 0 {
			elems[i] = e[:at]
		}
	}
	if len(elems) > 2 {
		elems = elems[len(elems)-2:]
	}
	return strings.Join(elems, "/")
}

// analysisOptions is the selection both sides are read with.
func (s *Settings) analysisOptions() []analysis.Option {
	return []analysis.Option{s.Selection}
}

// yardMedian is the yardstick size above which its per-run factor is a
// median rather than a sum.
const yardMedian = 5

// UnrelatedError is Compare's error when the two sides share almost no
// functions (under 10% of either side's time): a Go profile against a Node
// one, or a selection that leaves other functions on each side. Callers
// that know the files name them (Files).
type UnrelatedError struct {
	// BaseShared and HeadShared are the fractions of each side's time in
	// functions both sides have.
	BaseShared, HeadShared float64
	Hint                   string
	// Files names each side's files, when the caller sets them.
	Files [2][]string
}

func (e *UnrelatedError) Error() string {
	side := func(name string, files []string) string {
		if len(files) == 0 {
			return name
		}
		if len(files) > 3 {
			return fmt.Sprintf("%s (%s and %d more)", name, strings.Join(files[:2], ", "), len(files)-2)
		}
		return fmt.Sprintf("%s (%s)", name, strings.Join(files, ", "))
	}
	return fmt.Sprintf("diff: %s and %s share functions holding only %.1f%% of the base's time and %.1f%% of the head's: %s",
		side("base", e.Files[0]), side("head", e.Files[1]), 100*e.BaseShared, 100*e.HeadShared, e.Hint)
}
