package history

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fuzzNow is the clock records are checked at in FuzzRecord.
var fuzzNow = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// FuzzRecord decodes a note and checks it as the history's readers do
// (Unmarshal, Validate): never a panic, and a record taken is taken again
// after it is written and read back (what Put writes of it). The seeds
// are the records cmd/hotbudget's tests make with history append's
// reading of record's output (testdata/*.json; TestHistoryTampered*
// checks they are still what it makes) and this package's.
func FuzzRecord(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	if len(seeds) < 2 {
		f.Fatalf("seeds %v: want the records of testdata", seeds)
	}
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, r := range []*Record{record("0123456789abcdef0123456789abcdef01234567", 1000, 3), withRuns(record("0123456789abcdef0123456789abcdef01234567", 1000, 3))} {
		data, err := r.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Unmarshal(data)
		if err != nil || r.Validate(fuzzNow) != nil {
			return
		}
		again, err := r.Marshal()
		if err != nil {
			t.Fatalf("a record taken does not marshal: %v", err)
		}
		r2, err := Unmarshal(again)
		if err != nil {
			t.Fatalf("a record taken, written again, is refused: %v\n%s", err, again)
		}
		if err := r2.Validate(fuzzNow); err != nil {
			t.Fatalf("a record taken, written again, fails: %v\n%s", err, again)
		}
		if again2, _ := r2.Marshal(); !bytes.Equal(again, again2) {
			t.Fatalf("a record written twice differs:\n%s\n%s", again, again2)
		}
	})
}

// TestValidateSeeds checks the records of testdata are taken, and that
// the checks of the time they were recorded move with the clock.
func TestValidateSeeds(t *testing.T) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Unmarshal(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Validate(fuzzNow); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		// Checked before it was recorded (beyond the clock skew): refused.
		if err := r.Validate(fuzzNow.Add(-24 * time.Hour)); err == nil {
			t.Errorf("%s: taken a day before it was recorded", path)
		}
	}
	if len(seeds) < 2 {
		t.Errorf("seeds %v", seeds)
	}
}
