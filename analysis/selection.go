package analysis

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hotbudget/hotbudget/internal/index"
)

// Selection says which samples of a profile count, and by which value. It
// is the one description of a selection in the module: analysis tables,
// diff's comparisons (diff.Settings.Selection), perfassert's checks
// (perfassert.WithSelection), budget rules (budget.Rule.Selection) and
// the command line's --thread, --pid, --focus, --ignore and
// --drop-synthetic all hold one, with the same meaning for each field.
// There is no option per field: a package that takes a selection takes a
// Selection (analysis' Functions, Stacks and Index methods, as their
// Option) or one WithSelection option (diff, limits, perfassert).
//
// The zero Selection keeps every sample and uses the profile's default
// sample type.
type Selection struct {
	// Threads keeps only the samples of these threads, each matched by its
	// thread name or tid label (as the loaders set them): several threads
	// select the union. Empty keeps every thread. A name may not be empty.
	Threads []string
	// Processes is Threads for processes, matched by process name or pid.
	Processes []string
	// DropSynthetic removes the samples whose leaf frame stands for no code
	// of the program: V8's and speedscope's markers "(idle)", "(program)"
	// (the engine itself), "(garbage collector)" and "(root)". They go from
	// the rows and from the total: shares become shares of the time the
	// program itself ran.
	DropSynthetic bool
	// Focus keeps only the samples with a frame whose function name
	// matches it (pprof's -focus); Ignore drops the samples with one
	// (pprof's -ignore). Neither changes the total: shares stay relative
	// to all samples the other fields select.
	Focus, Ignore *regexp.Regexp
	// ToCaller charges the time of the functions whose names match it,
	// when they are a sample's leaf, to the function below them on the
	// stack (their caller). Go's runtime.asyncPreempt is the model: the
	// scheduler's preemption signal makes it the leaf of the interrupted
	// function's stack, and how often that happens follows how busy the
	// machine is, not the program; its time is the interrupted function's.
	// Nil charges nothing.
	ToCaller *regexp.Regexp
	// SampleType picks the sample value as `go tool pprof -sample_index`
	// does: by type name (e.g. "cpu", "wall", "alloc_space"), or by its
	// index in the profile's sample types ("0"). Empty is the profile's
	// DefaultSampleType, else its last type: inuse_space for a Go heap
	// profile, alloc_space for runtime/pprof's "allocs" profile. Times,
	// bytes and counts (objects) can be selected; Table.Unit says which.
	SampleType string
}

func (s Selection) apply(c *Selection) {
	*c = s
	c.Threads = slices.Clone(s.Threads)
	c.Processes = slices.Clone(s.Processes)
}

// Validate reports a selection that cannot mean what it says: an empty
// thread or process name.
func (s Selection) Validate() error {
	if slices.Contains(s.Threads, "") {
		return errors.New("empty thread name or tid in the selection")
	}
	if slices.Contains(s.Processes, "") {
		return errors.New("empty process name or pid in the selection")
	}
	return nil
}

// String says in words what s selects, for messages: `thread "main",
// without synthetic frames`; "" for the zero Selection.
func (s Selection) String() string {
	var parts []string
	names := func(what string, vs []string) {
		if len(vs) == 0 {
			return
		}
		q := make([]string, len(vs))
		for i, v := range vs {
			q[i] = fmt.Sprintf("%q", v)
		}
		parts = append(parts, what+" "+strings.Join(q, " or "))
	}
	names("thread", s.Threads)
	names("process", s.Processes)
	if s.DropSynthetic {
		parts = append(parts, "without synthetic frames")
	}
	if s.Focus != nil {
		parts = append(parts, "focus /"+s.Focus.String()+"/")
	}
	if s.Ignore != nil {
		parts = append(parts, "ignore /"+s.Ignore.String()+"/")
	}
	if s.ToCaller != nil {
		parts = append(parts, "/"+s.ToCaller.String()+"/ charged to callers")
	}
	if s.SampleType != "" {
		parts = append(parts, fmt.Sprintf("sample type %q", s.SampleType))
	}
	return strings.Join(parts, ", ")
}

// selectionOf is the last Selection of opts (the zero one for none),
// validated.
func selectionOf(opts []Option) (Selection, error) {
	var s Selection
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("analysis: %w", err)
	}
	return s, nil
}

// index turns s into the index's selection: the one place it is read.
func (s Selection) index() index.Selection {
	sel := index.Selection{
		SampleType: s.SampleType,
		Threads:    s.Threads,
		Processes:  s.Processes,
		Focus:      s.Focus,
		Ignore:     s.Ignore,
	}
	if s.DropSynthetic {
		sel.Synthetic = index.IsSynthetic
	}
	if s.ToCaller != nil {
		sel.ToCaller = s.ToCaller.MatchString
	}
	return sel
}
