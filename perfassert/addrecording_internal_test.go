package perfassert

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// captureOf is a capture of one process as Capture records it: one run of
// 10 iterations, its samples on one function, built by build.
func captureOf(t *testing.T, build string, samples int64) *profile.Profile {
	t.Helper()
	p := oneFunctionProfile("example.com/m.work", samples, map[string][]string{meta.LabelRun: {"1"}})
	meta.Set(p, meta.Record{Build: build, Sampler: "perf", WorkUnit: meta.WorkIteration, Runs: []meta.Run{{Label: "1", Work: 10, CPUNanos: samples * 1e6}}})
	return p
}

// recordingOf merges n captures (samples first, first+1, ...) as an
// update records them.
func recordingOf(t *testing.T, build string, n int, first int64) *profile.Profile {
	t.Helper()
	ps := make([]*profile.Profile, n)
	for i := range ps {
		ps[i] = captureOf(t, build, first+int64(i))
	}
	p, err := meta.MergeProcesses(ps)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// samplesByProcess is each process's samples, in process order.
func samplesByProcess(t *testing.T, p *profile.Profile) []int64 {
	t.Helper()
	parts, err := meta.SplitProcesses(p)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(parts))
	for i, q := range parts {
		for _, s := range q.Sample {
			out[i] += s.Value[0]
		}
	}
	return out
}

func TestAddRecording(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.pb.gz")
	const build = "go1.26.8 linux/amd64"

	// No baseline yet: the recording is the baseline.
	rec := recordingOf(t, build, 2, 100)
	held, err := baselineToAdd(path, capturedOf(rec).rec)
	if err != nil || held != nil {
		t.Fatalf("no baseline: %v, %v", held, err)
	}
	got, note, err := addRecording(path, held, rec)
	if err != nil || got != rec || !strings.Contains(note, "no baseline to add to") {
		t.Fatalf("no baseline: %v, %q", err, note)
	}

	// add writes held as the baseline and adds rec to it as an update does.
	add := func(held *profile.Profile) (*profile.Profile, string) {
		t.Helper()
		if err := WriteBaseline(path, held); err != nil {
			t.Fatal(err)
		}
		read, err := baselineToAdd(path, capturedOf(rec).rec)
		if err != nil {
			t.Fatal(err)
		}
		got, note, err := addRecording(path, read, rec)
		if err != nil {
			t.Fatal(err)
		}
		return got, note
	}

	// Three held, two added: the new ones first.
	got, note = add(recordingOf(t, build, 3, 200))
	if s := fmtInts(samplesByProcess(t, got)); s != "100,101,200,201,202" {
		t.Errorf("processes' samples %s, want the new 100 and 101, then the held 200-202", s)
	}
	if note != "added 2 processes to the 3 processes it held" {
		t.Errorf("note %q", note)
	}

	// Beyond maxAddedProcesses the oldest go.
	got, note = add(recordingOf(t, build, maxAddedProcesses, 1000))
	s := samplesByProcess(t, got)
	if len(s) != maxAddedProcesses || s[0] != 100 || s[2] != 1000 || s[len(s)-1] != 1000+maxAddedProcesses-3 {
		t.Errorf("%d processes, first %v, last %d; want %d: the new two, then the held ones but the oldest two", len(s), s[:3], s[len(s)-1], maxAddedProcesses)
	}
	if !strings.Contains(note, "the oldest 2 were dropped (a baseline keeps 48)") {
		t.Errorf("note %q", note)
	}

	// A baseline without a record of its runs (written before baselines
	// held them): refused.
	bare := captureOf(t, build, 5)
	bare.Comments = nil
	bare.Sample[0].Label = nil
	bare2 := filepath.Join(dir, "bare.pb.gz")
	if err := WriteBaseline(bare2, bare); err != nil {
		t.Fatal(err)
	}
	if _, err := baselineToAdd(bare2, capturedOf(rec).rec); err == nil || !strings.Contains(err.Error(), "it records no runs") {
		t.Errorf("a baseline without runs: %v", err)
	}

	// Another build, another sampler, the race detector: refused (before
	// MatchBaseline records anything).
	for _, other := range []func(*meta.Record){
		func(r *meta.Record) { r.Build = "go1.25.1 linux/amd64" },
		func(r *meta.Record) { r.Sampler = "pprof" },
		func(r *meta.Record) { r.Race = true },
	} {
		q := recordingOf(t, build, 2, 100)
		r, _ := meta.Known(q)
		other(&r)
		meta.Set(q, r)
		if _, err := baselineToAdd(path, r); err == nil || !strings.Contains(err.Error(), "record it anew (HOTBUDGET_UPDATE=1)") {
			t.Errorf("a recording of %+v added: %v", r, err)
		}
	}
}

func fmtInts(s []int64) string {
	var b strings.Builder
	for i, v := range s {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(strconv.FormatInt(v, 10))
	}
	return b.String()
}

// TestUpdateOncePerProcess: a baseline this process recorded already (go
// test -count=3 runs the test three times) is kept, not recorded again,
// and the test log says so; a baseline it did not record is not held back.
func TestUpdateOncePerProcess(t *testing.T) {
	t.Setenv(UpdateEnv, "1")
	t.Setenv(childDirEnv, "")
	dir := t.TempDir()
	path := filepath.Join(dir, "kept.pb.gz")
	if recordedHere(path) != "" || recordedHere(filepath.Join(dir, "other.pb.gz")) != "" {
		t.Fatal("a baseline nobody recorded is said to be recorded")
	}
	markRecorded(path)
	r := &recT{}
	p := oneFunctionProfile("example.com/m.f", 100, nil)
	if !MatchBaseline(r, path, p) || len(r.errs) > 0 {
		t.Fatalf("the second update in one process failed: %v", r.errs)
	}
	if logs := strings.Join(r.logs, "\n"); !strings.Contains(logs, "was recorded by this test process already") || !strings.Contains(logs, "go test -count=N") {
		t.Errorf("the log does not say the baseline was kept:\n%s", logs)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the baseline was written again: %v", err)
	}
	// The same file by another spelling of its path.
	rel, err := filepath.Rel(".", path)
	if err == nil && recordedHere(rel) == "" {
		t.Errorf("%s is %s, recorded already", rel, path)
	}
}
