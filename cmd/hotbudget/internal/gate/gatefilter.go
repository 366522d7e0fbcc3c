package gate

import (
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/input"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
	"github.com/hotbudget/hotbudget/internal/modname"
	"github.com/hotbudget/hotbudget/internal/suggest"
	"github.com/hotbudget/hotbudget/loaders"
)

// ModulePattern matches the function names of the modules' packages and
// their external test packages as the Go toolchain writes them
// (modname.Pattern: "gopkg.in/yaml%2ev3.F" is gopkg.in/yaml.v3's), as
// perfassert selects the module under test. For no module it matches
// nothing, so that a gate of none judges nothing (and says so).
func ModulePattern(mods []string) *regexp.Regexp {
	if re := modname.Pattern(mods); re != nil {
		return re
	}
	return regexp.MustCompile(`[^\s\S]`)
}

// GateUnmatched is the error of a gate that matched none of the functions
// reps compared, naming it (gateWhat) and the names closest to it: nothing
// judged is not a pass. It is nil when some function is gated, and for
// reports without a gate.
func GateUnmatched(reps []*diff.Report, what string, mods []string, gate string) error {
	var names []suggest.Candidate
	for _, r := range reps {
		if r.Settings.Gate == nil {
			return nil
		}
		for _, row := range r.Rows {
			if !row.Ungated {
				return nil
			}
			names = append(names, suggest.Candidate{Name: row.Name, Weight: max(row.Base.Self, row.Head.Self)})
		}
	}
	if len(reps) == 0 {
		return nil
	}
	return errors.New(modname.Unmatched(what, mods, gate, names))
}

// mergeRuns is the profiles of the runs ps merged into one (ps copied:
// profile.Merge may normalise its inputs).
func mergeRuns(ps []*profile.Profile) (*profile.Profile, error) {
	if len(ps) == 1 {
		return ps[0], nil
	}
	cp := make([]*profile.Profile, len(ps))
	for i, p := range ps {
		cp[i] = p.Copy() // Merge may normalise its inputs
	}
	return profile.Merge(cp)
}

// WriteDiffPprof loads each side's profiles, merges its runs and writes
// diff.ToPprof's profile.
func WriteDiffPprof(path string, basePaths, headPaths []string, opts []loaders.Option) error {
	load := func(paths []string) ([]*profile.Profile, error) {
		files, err := input.Globs(paths)
		if err != nil {
			return nil, err
		}
		ps := make([]*profile.Profile, len(files))
		for i, f := range files {
			if ps[i], err = loaders.Load(f, opts...); err != nil {
				return nil, err
			}
		}
		return ps, nil
	}
	base, err := load(basePaths)
	if err != nil {
		return err
	}
	head, err := load(headPaths)
	if err != nil {
		return err
	}
	b, err := mergeRuns(base)
	if err != nil {
		return fmt.Errorf("--pprof: merging baseline runs: %w", err)
	}
	h, err := mergeRuns(head)
	if err != nil {
		return fmt.Errorf("--pprof: merging head runs: %w", err)
	}
	d, err := diff.ToPprof(b, h)
	if err != nil {
		return fmt.Errorf("--pprof: %w", err)
	}
	return atomicfile.Write(path, func(f *os.File) error { return loaders.Write(f, d, loaders.FormatPprof) })
}
