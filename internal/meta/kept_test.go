package meta_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// TestKeptFactsAreRead: the facts kept beside a profile (Keep) are what
// Get, Known, Of, Split and SplitProcesses read, not its comments: a
// capture's comments that say something else, or nothing, change nothing;
// Set writes both.
func TestKeptFactsAreRead(t *testing.T) {
	p := twoRunProfile()
	want, _, _ := meta.Get(p)
	meta.Keep(p, meta.Facts{Record: want, HasRecord: true, Exact: true})
	p.Comments = []string{"kept by the user"} // the record's comment gone
	if r, ok, err := meta.Get(p); err != nil || !ok || r.Name != want.Name || len(r.Runs) != 2 {
		t.Fatalf("Get of a kept profile without its comment: %+v, %v, %v", r, ok, err)
	}
	if r, ok := meta.Known(p); !ok || r.Runs[1].Work != 50 {
		t.Errorf("Known of a kept profile: %+v, %v", r, ok)
	}
	if f := meta.Of(p); !f.Exact || !f.HasRecord {
		t.Errorf("Of of a kept profile: %+v", f)
	}
	if f := meta.Read(p.Comments); f.HasRecord || f.Exact {
		t.Errorf("Read of the comments found %+v: the test's premise does not hold", f)
	}
	runs, err := meta.Split(p)
	if err != nil || len(runs) != 2 {
		t.Fatalf("Split of a kept profile: %d runs, %v", len(runs), err)
	}
	for j, q := range runs {
		f, ok := meta.Kept(q)
		if !ok || len(f.Record.Runs) != 1 || f.Record.Runs[0].Work != want.Runs[j].Work || !f.Exact {
			t.Errorf("run %d of a kept profile: kept %v, facts %+v", j+1, ok, f)
		}
	}
	procs, err := meta.SplitProcesses(p)
	if err != nil || len(procs) != 1 {
		t.Fatalf("SplitProcesses of a kept profile: %d, %v", len(procs), err)
	}
	if f, ok := meta.Kept(procs[0]); !ok || f.Record.Runs[0].Work != 150 {
		t.Errorf("the process of a kept profile: kept %v, facts %+v", ok, f)
	}

	changed := want
	changed.Name = "renamed"
	meta.Set(p, changed)
	if r, _ := meta.Known(p); r.Name != "renamed" {
		t.Errorf("Set did not change the kept record: %q", r.Name)
	}
	if f := meta.Read(p.Comments); f.Record.Name != "renamed" {
		t.Errorf("Set did not write the comment: %+v", f.Record)
	}
	if f, _ := meta.Kept(p); !f.Exact {
		t.Error("Set dropped the kept facts beside the record")
	}
}

// TestNotKeptReadsComments: a profile this process did not keep (a file
// loaded, one built by hand) is read from its comments, and Kept says so.
func TestNotKeptReadsComments(t *testing.T) {
	p := twoRunProfile()
	if _, ok := meta.Kept(p); ok {
		t.Fatal("a profile built by hand is kept")
	}
	if f := meta.Of(p); !f.HasRecord || f.Record.Name != "capture of TestX" {
		t.Errorf("Of of a profile not kept: %+v", f)
	}
	if _, ok := meta.Kept(nil); ok {
		t.Error("nil is kept")
	}
	meta.Keep(nil, meta.Facts{}) // no panic
	runs, err := meta.Split(p)
	if err != nil || len(runs) != 2 {
		t.Fatal(err)
	}
	if _, ok := meta.Kept(runs[0]); ok {
		t.Error("a run of a profile not kept is kept")
	}
}

// TestKeptGoesWithItsProfile: the table holds its profiles weakly: an entry
// goes when its profile is collected, so a test binary capturing
// thousands of times does not keep them all.
func TestKeptGoesWithItsProfile(t *testing.T) {
	const n = 200
	for range n {
		meta.Keep(&profile.Profile{Sample: make([]*profile.Sample, 1000)}, meta.Facts{HasRecord: true})
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		left := meta.KeptCount()
		if left < n/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d dropped profiles still kept after 5s of collections", left, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
