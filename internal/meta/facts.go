package meta

import (
	"slices"

	"github.com/google/pprof/profile"
)

// Facts are the facts hotbudget keeps in a profile's comments, read once
// (Read): the record, the mark of exact durations and the loaders'
// warnings. An index reads them when it is built
// (index.Index.Facts), so that every reader of one comparison (the split
// into runs or processes, the work of a run, the golden test's notes)
// takes them from there instead of parsing the comments again. A capture
// this process made keeps its facts beside its profile (Keep), with its
// allocation profile typed; read from comments, the allocation profile,
// large and read by one caller, stays in the comments (AllocProfile).
type Facts struct {
	// Record is the record (FromComments), zero when HasRecord is false.
	Record    Record
	HasRecord bool
	// RecordErr says the record comment could not be read; Record is then
	// zero.
	RecordErr error
	// Exact is IsExact; Warnings is Warnings.
	Exact    bool
	Warnings []string
	// Allocs is the allocation profile of a capture this process made
	// (Keep), with its own facts kept too; nil when the facts were read
	// from comments (AllocProfile reads theirs) or the capture has none.
	Allocs *profile.Profile
}

// Read reads the facts of comments.
func Read(comments []string) Facts {
	var f Facts
	f.Record, f.HasRecord, f.RecordErr = FromComments(comments)
	f.Exact = IsExact(comments)
	f.Warnings = slices.Clip(Warnings(comments))
	return f
}

// Known is the record when one was read without error: for readers that
// then know nothing (a name for messages, the work a profile did), as the
// function Known.
func (f Facts) Known() (Record, bool) {
	if f.RecordErr != nil || !f.HasRecord {
		return Record{}, false
	}
	return f.Record, true
}
