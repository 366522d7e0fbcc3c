// Where a capture's facts meet pprof comments: written when a capture becomes a profile that may leave the process, read when a profile made elsewhere comes in.

package perfassert

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// This file and the files that record baselines (processes.go,
// exactbaseline.go, baselineupdate.go) are the only ones of perfassert that
// call internal/meta's readers and writers of comments or touch a
// profile's Comments (TestCommentsOnlyAtBaselines): everywhere else a
// capture is a captured value (captured.go), its facts typed.
//
// A capture's comments are written once, when it is made (keepCapture):
// the profile Capture returns is what a test saves with p.Write and what
// WriteBaseline writes, and a saved capture or baseline must carry its
// runs, work and allocations for hotbudget (diff, top, budget files) and
// for MatchBaseline to read back. They are read only from profiles this
// process did not make (readCaptured, indexCaptured): a baseline file, a
// profile a test loaded or built by hand.

// keepCapture makes p a capture of this process with facts f: kept typed
// (meta.Keep), and written into p's comments, which it replaces (the
// record, the mark of exact counts, the allocation profile with its own
// record), for the saved forms above. f.Allocs, when set, is kept too.
func keepCapture(p *profile.Profile, f meta.Facts) error {
	comments, err := factComments(f)
	if err != nil {
		return err
	}
	p.Comments = comments
	meta.Keep(p, f)
	return nil
}

// factComments returns the comments that hold the facts f of a capture:
// the mark of exact counts, the record, and the allocation profile with
// its own record.
func factComments(f meta.Facts) ([]string, error) {
	var c []string
	if f.Exact {
		c = meta.MarkExact(c)
	}
	if f.HasRecord {
		c = meta.WithRecord(c, f.Record)
	}
	if ap := f.Allocs; ap != nil {
		af, ok := meta.Kept(ap)
		if !ok {
			return nil, errors.New("perfassert: the allocation profile of a capture was not kept")
		}
		ap.Comments = nil
		if af.HasRecord {
			meta.Set(ap, af.Record)
		}
		var b bytes.Buffer
		if err := ap.Write(&b); err != nil {
			return nil, fmt.Errorf("perfassert: writing the allocation profile: %w", err)
		}
		c = meta.WithAllocProfile(c, b.Bytes())
	}
	return c, nil
}

// savedForm is p as a baseline file holds it: a capture of this process
// with its comments written afresh from its kept facts (on a copy that
// shares p's samples, locations and functions: p is not modified), any
// other profile as it is.
func savedForm(p *profile.Profile) (*profile.Profile, error) {
	f, ok := meta.Kept(p)
	if !ok {
		return p, nil
	}
	comments, err := factComments(f)
	if err != nil {
		return nil, err
	}
	return &profile.Profile{
		SampleType: p.SampleType, DefaultSampleType: p.DefaultSampleType, Sample: p.Sample,
		Mapping: p.Mapping, Location: p.Location, Function: p.Function,
		Comments: comments, DocURL: p.DocURL, DropFrames: p.DropFrames, KeepFrames: p.KeepFrames,
		TimeNanos: p.TimeNanos, DurationNanos: p.DurationNanos, PeriodType: p.PeriodType, Period: p.Period,
	}, nil
}

// attachAllocs makes ap the allocation profile of p, a capture being made:
// kept with p's facts (read from p's comments when p is not kept yet), and
// written into p's comments as an allocation comment. ap's own facts are
// kept already (captureAllocs) or, for allocations counted under
// callgrind, read from the record exactallocs.go sets in its comments.
func attachAllocs(p, ap *profile.Profile) error {
	if _, ok := meta.Kept(ap); !ok {
		meta.Keep(ap, meta.Read(ap.Comments))
	}
	var b bytes.Buffer
	if err := ap.Write(&b); err != nil {
		return fmt.Errorf("perfassert: writing the allocation profile: %w", err)
	}
	f, ok := meta.Kept(p)
	if !ok {
		f = meta.Read(p.Comments)
	}
	f.Allocs = ap
	p.Comments = meta.WithAllocProfile(p.Comments, b.Bytes())
	meta.Keep(p, f)
	return nil
}

// readCaptured reads the facts of p, a profile this process did not make
// (a baseline, a profile the caller loaded or built), from its comments.
func readCaptured(p *profile.Profile) captured {
	return newCaptured(p, meta.Read(p.Comments), false, p.Comments)
}

// indexCaptured is the capture of a baseline loaded as the index x: its
// facts as the loader read them, its allocations still in its comments.
func indexCaptured(x *analysis.Index) captured {
	ix := (*indexload.Index)(x).Index()
	return newCaptured(nil, ix.Facts, false, ix.Comments)
}

// allocs returns c's allocation profile, nil when c holds none: a
// capture's, kept; a baseline's, decoded from its comments (and kept, so
// that its record is read once).
func (c captured) allocs() (*profile.Profile, error) {
	if c.kept {
		return c.facts.Allocs, nil
	}
	ap, _, err := allocProfileOf(c.comments)
	return ap, err
}

// allocProfileOf decodes the allocation profile comments hold; ok is
// false when they hold none. The profile it returns is kept with the
// facts of its own comments.
func allocProfileOf(comments []string) (ap *profile.Profile, ok bool, err error) {
	raw, found, err := meta.AllocProfile(comments)
	if err != nil || !found {
		return nil, false, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, false, fmt.Errorf("the profile's allocation record: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(zr, maxAllocProfile+1))
	if err != nil {
		return nil, false, fmt.Errorf("the profile's allocation record: %w", err)
	}
	if len(data) > maxAllocProfile {
		return nil, false, fmt.Errorf("the profile's allocation record is larger than %d MiB decompressed", maxAllocProfile>>20)
	}
	ap, err = profile.ParseUncompressed(data)
	if err != nil {
		return nil, false, fmt.Errorf("the profile's allocation record: %w", err)
	}
	if oi, bi := allocIndexes(ap); oi < 0 || bi < 0 {
		return nil, false, errors.New("the profile's allocation record has no alloc_objects and alloc_space sample types")
	}
	meta.Keep(ap, meta.Read(ap.Comments))
	return ap, true, nil
}

// splitRuns is SplitRuns: a capture's runs are cut by its kept record
// (and kept, each with its own), a profile made elsewhere's by its
// comments'; each run's comments hold its record (meta.Split), as a run
// a test saves needs.
func splitRuns(p *profile.Profile) ([]*profile.Profile, error) {
	return meta.Split(p)
}

// splitProcesses is meta.SplitProcesses: one profile per process of p,
// kept with its record when p is a capture of this process.
func splitProcesses(p *profile.Profile) ([]*profile.Profile, error) {
	return meta.SplitProcesses(p)
}

// loaderWarnings are the warnings a loader left in the comments of a
// profile it read (callgrind's dumps a counting child leaves).
func loaderWarnings(p *profile.Profile) []string {
	return meta.Warnings(p.Comments)
}
