package history

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// putRaw stores data as the note of commit as it is, as anyone who can
// push the notes ref can (Put would check it).
func putRaw(t *testing.T, n Notes, commit string, data []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "note")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	blob, err := n.git(context.Background(), nil, "hash-object", "-w", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.git(context.Background(), nil, append(n.identity(context.Background()), "notes", "--ref", n.ref(), "add", "-f", "-C", strings.TrimSpace(string(blob)), commit)...); err != nil {
		t.Fatal(err)
	}
}

// TestNotesBounded checks the readers of notes refuse, naming the commit:
// a note beyond MaxNoteBytes before reading it (in well under a second;
// history show read a note of 500 MB whole in 10.6 s and 2.1 GB), notes
// beyond the bound of one read in all, and a record that fails Validate;
// and that Get and Load take the valid ones, and Prune a history too
// large to load at once.
func TestNotesBounded(t *testing.T) {
	dir, commits := gitRepo(t, 4)
	ctx := context.Background()
	n := Notes{Dir: dir}
	for _, c := range commits[:3] {
		if err := n.Put(ctx, withRuns(record(c, 1000, 3))); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := n.Get(ctx, commits[1]); err != nil || r == nil || r.Commit != commits[1] {
		t.Fatalf("Get: %v, %v", r, err)
	}
	// Beyond the bound of one read: Load refuses at the note that crosses
	// it; Prune, one note at a time, takes them.
	blobs, _, _, err := n.history(ctx, "main")
	if err != nil || len(blobs) != 3 {
		t.Fatalf("%d notes: %v", len(blobs), err)
	}
	one := int64(len(must(t, withRuns(record(commits[0], 1000, 3)).Marshal)))
	_, _, err = n.load(ctx, "main", 2*one+one/2, MaxHistoryEntries)
	if err == nil || !strings.Contains(err.Error(), "the note of "+commits[2]) || !strings.Contains(err.Error(), "the notes read hold more than") {
		t.Errorf("three notes of %d bytes within %d: %v", one, 2*one+one/2, err)
	}
	// Each record keeps a benchmark and a function: 6 in all.
	if _, _, err = n.load(ctx, "main", MaxHistoryBytes, 5); err == nil || !strings.Contains(err.Error(), "the note of "+commits[2]) || !strings.Contains(err.Error(), "more than 5 benchmarks and functions") {
		t.Errorf("6 benchmarks and functions within 5: %v", err)
	}
	if recs, _, err := n.load(ctx, "main", MaxHistoryBytes, 6); err != nil || len(recs) != 3 {
		t.Errorf("6 benchmarks and functions within 6: %d records, %v", len(recs), err)
	}
	if pruned, err := n.Prune(ctx, "main", Retention{KeepFunctions: 1}); err != nil || len(pruned) != 2 {
		t.Errorf("prune: %v, %v", pruned, err)
	}
	// A note beyond MaxNoteBytes: refused unread.
	putRaw(t, n, commits[3], []byte(`{"schema":"`+Schema+`","benchmarks":[`+strings.Repeat(" ", MaxNoteBytes)+`]}`))
	t0 := time.Now()
	_, _, err = n.Load(ctx, "main")
	if err == nil || !strings.Contains(err.Error(), "the note of "+commits[3]) || !strings.Contains(err.Error(), "beyond the 16 MiB a note may hold: refused unread") {
		t.Errorf("a note beyond the limit: %v", err)
	}
	if _, err := n.Get(ctx, commits[3]); err == nil || !strings.Contains(err.Error(), "refused unread") {
		t.Errorf("Get of a note beyond the limit: %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("refusing a large note took %s", d)
	}
	// A record that fails Validate, or of another commit.
	bad := withRuns(record(commits[3], 1000, 3))
	bad.Benchmarks = append(bad.Benchmarks, bad.Benchmarks[0])
	putRaw(t, n, commits[3], must(t, bad.Marshal))
	if _, _, err = n.Load(ctx, "main"); err == nil || !strings.Contains(err.Error(), "the note of "+commits[3]+" under refs/notes/hotbudget: refused: benchmark \"example.com/m BenchmarkParse\" twice") {
		t.Errorf("a benchmark twice: %v", err)
	}
	if err := n.Put(ctx, bad); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("Put of a benchmark twice: %v", err)
	}
	putRaw(t, n, commits[3], must(t, withRuns(record(commits[0], 1000, 3)).Marshal))
	if _, err = n.Get(ctx, commits[3]); err == nil || !strings.Contains(err.Error(), "holds the record of "+commits[0]) {
		t.Errorf("a record of another commit: %v", err)
	}
}

func must(t *testing.T, f func() ([]byte, error)) []byte {
	t.Helper()
	b, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
