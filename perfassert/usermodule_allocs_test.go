package perfassert_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/internal/srcdeps"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/perfassert"
)

// A user's module whose hot function gains one allocation per call when
// built with -tags extraalloc, tested beside a parallel test that
// allocates small objects (tiny ones, which share the allocator's blocks)
// as fast as it can for as long as the capture runs.
const (
	kvGoMod = `module example.com/kv

go 1.26.0

require github.com/hotbudget/hotbudget v0.0.0-00010101000000-000000000000

replace github.com/hotbudget/hotbudget => %s
`
	kvSource = `// Package kv reads key=value lines.
package kv

import "strings"

// Pair is one key=value line.
type Pair struct{ Key, Value string }

type keyRef struct {
	n    int
	next *keyRef
}

var refs *keyRef

// Parse reads the key=value lines of input.
func Parse(input string) []Pair {
	var out []Pair
	for _, line := range strings.Split(input, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		out = append(out, Pair{Key: normalizeKey(k), Value: strings.TrimSpace(v)})
	}
	return out
}

// normalizeKey lower-cases a key and drops its blanks.
//
//go:noinline
func normalizeKey(k string) string {
	b := make([]byte, 0, len(k)+32)
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c == ' ' {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	s := string(b)
	if extraAlloc {
		refs = &keyRef{n: len(s)} // the allocation the change adds
	}
	return s
}

// Input returns n lines of sample input.
func Input(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(" Some-Long-Key-Number-" + string(rune('A'+i%26)) + " = value\n")
	}
	return b.String()
}
`
	kvPlain = `//go:build !extraalloc

package kv

const extraAlloc = false
`
	kvExtra = `//go:build extraalloc

package kv

const extraAlloc = true
`
	kvTest = `package kv

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/perfassert"
)

var _ = time.Second

var (
	input          = Input(200)
	captureStarted = make(chan struct{})
	captureDone    = make(chan struct{})
)

func TestParseAllocations(t *testing.T) {
	t.Parallel()
	var once sync.Once
	p := perfassert.Capture(t, func() {
		once.Do(func() { close(captureStarted) })
		Parse(input)
	}%s)
	close(captureDone)
	// 200 calls an iteration: the byte slice and the string of each key.
	perfassert.MaxAllocs(t, p, "example.com/kv.normalizeKey", 400)
	perfassert.MatchBaseline(t, "testdata/parse.pb.gz", p)
}

var junk []string

func TestAllocatesBeside(t *testing.T) {
	t.Parallel()
	<-captureStarted
	n := 0
	for {
		select {
		case <-captureDone:
			t.Logf("allocated %%d small strings beside the capture", n)
			return
		default:
			junk = append(junk[:0], strconv.Itoa(n), strconv.Itoa(n*7))
			n++
		}
	}
}
`
)

// writeKVModule writes the kv module into a temporary directory.
func writeKVModule(t *testing.T, captureOpts string) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	srcdeps.Track(t, root)
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"go.mod": fmt.Sprintf(kvGoMod, root), "go.sum": string(sum),
		"kv.go": kvSource, "plain.go": kvPlain, "extra.go": kvExtra,
		"kv_test.go": fmt.Sprintf(kvTest, captureOpts),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// kvRun runs one of the kv module's test binaries and says whether it
// passed, whether the exact allocation verdict failed naming
// normalizeKey, and whether MaxAllocs failed naming its line.
type kvOutcome struct {
	passed, allocsRegressed, maxAllocsLine, cpuRegressed bool
	text                                                 string
}

func kvRun(t *testing.T, dir, bin string, update bool, env ...string) kvOutcome {
	t.Helper()
	cmd := exec.Command("./"+bin, "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), perfassert.UpdateEnv+"="), env...)
	if update {
		cmd.Env = append(cmd.Env, perfassert.UpdateEnv+"=1")
	}
	out, err := cmd.CombinedOutput()
	text := string(out)
	return kvOutcome{
		passed:          err == nil,
		allocsRegressed: regexp.MustCompile(`allocations regressed[^\n]*\n[^\n]*normalizeKey`).MatchString(text),
		maxAllocsLine:   regexp.MustCompile(`perfassert.MaxAllocs: [^\n]*normalizeKey[^\n]*want at most[\s\S]*allocating lines[\s\S]*kv\.go:\d+`).MatchString(text),
		cpuRegressed:    strings.Contains(text, "perfassert.MatchBaseline: ") && regexp.MustCompile(`\d+ functions? regressed`).MatchString(text),
		text:            text,
	}
}

// buildKV builds the kv module's test binaries, plain and extraalloc, with
// extra build flags (-race).
func buildKV(t *testing.T, dir string, flags ...string) {
	t.Helper()
	for _, tags := range []string{"", "extraalloc"} {
		args := append([]string{"-c", "-o", "kv" + tags + ".test", "-tags=" + tags}, flags...)
		if text, _, err := goTest(t, dir, nil, append(args, ".")...); err != nil {
			t.Fatalf("go test -c: %v\n%s", err, text)
		}
	}
}

// TestUserModuleAllocations: in a user's module, a baseline is recorded,
// the unchanged code's allocations match it exactly (while a parallel test
// allocates beside the capture), and the code that allocates once more per
// call fails MaxAllocs naming the allocating line and MatchBaseline's
// exact allocation verdict naming normalizeKey. An exact verdict is
// deterministic: one run each, and a baseline of four processes (the CPU
// verdict, which wants sixteen, is not what this test judges).
func TestUserModuleAllocations(t *testing.T) {
	testutil.Slow(t, "builds a user's module, records its baseline and runs its tests twice")
	dir := writeKVModule(t, ", perfassert.MaxDuration(time.Second)")
	buildKV(t, dir)
	if o := kvRun(t, dir, "kv.test", true, perfassert.ProcessesEnv+"=4"); !o.passed {
		t.Fatalf("recording the baseline failed:\n%s", o.text)
	}
	same := kvRun(t, dir, "kv.test", false)
	if same.allocsRegressed || same.maxAllocsLine || !strings.Contains(same.text, "allocations per iteration (exact): no function allocates more") {
		t.Errorf("unchanged code: allocation verdict not clean:\n%s", same.text)
	}
	changed := kvRun(t, dir, "kvextraalloc.test", false)
	// The allocation the change adds is a 16-byte object with a pointer,
	// which the memory profile cannot tell from a block of the tiny
	// allocator: shown, not judged; the counted instrument judges it
	// (TestUserModuleCountedAllocations).
	if changed.allocsRegressed || !strings.Contains(changed.text, "16-byte blocks per iteration changed in example.com/kv.normalizeKey +200: shown, not judged") {
		t.Errorf("one more 16-byte object per call: MatchBaseline judged it, or did not show it:\n%s", changed.text)
	}
	if !changed.maxAllocsLine {
		t.Errorf("one more allocation per call: MaxAllocs did not fail naming normalizeKey's line:\n%s", changed.text)
	}
	t.Logf("the changed code's test output:\n%s", lastLines(changed.text, 30))
	if !strings.Contains(changed.text, "example.com/kv.normalizeKey self allocations 600 per iteration") {
		t.Errorf("MaxAllocs does not give normalizeKey's 600 objects an iteration:\n%s", changed.text)
	}
}

// kvCountedTest is the kv module's test of counted allocations.
const kvCountedTest = `package kv

import (
	"testing"

	"github.com/hotbudget/hotbudget/perfassert"
)

var input = Input(20)

func TestParseAllocations(t *testing.T) {
	p := perfassert.Capture(t, func() { Parse(input) }, perfassert.Instructions())
	perfassert.MaxAllocs(t, p, "example.com/kv.normalizeKey", 40)
	perfassert.MatchBaseline(t, "testdata/parse.pb.gz", p)
}
`

// TestUserModuleCountedAllocations: the kv module's change, one more
// 16-byte object with a pointer per call of normalizeKey, which the
// memory profile cannot judge, fails a counted baseline naming
// normalizeKey alone, and MaxAllocs; the unchanged code passes.
func TestUserModuleCountedAllocations(t *testing.T) {
	testutil.Slow(t, "builds a user's module, records its counted baseline and runs its tests twice under callgrind")
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip(err)
	}
	dir := writeKVModule(t, "")
	if err := os.WriteFile(filepath.Join(dir, "kv_test.go"), []byte(kvCountedTest), 0o644); err != nil {
		t.Fatal(err)
	}
	buildKV(t, dir)
	if o := kvRun(t, dir, "kv.test", true, perfassert.ProcessesEnv+"=2"); !o.passed {
		t.Fatalf("recording the baseline failed:\n%s", o.text)
	}
	if same := kvRun(t, dir, "kv.test", false); !same.passed {
		t.Errorf("unchanged code failed:\n%s", same.text)
	}
	changed := kvRun(t, dir, "kvextraalloc.test", false)
	_, allocs, _ := strings.Cut(changed.text, "allocations regressed")
	if changed.passed || !changed.allocsRegressed || len(regexp.MustCompile(`(?m)^\s+regressed\s`).FindAllString(allocs, -1)) != 1 || !strings.Contains(changed.text, "perfassert.MaxAllocs") {
		t.Errorf("one more 16-byte object per call: not named alone by the counted baseline, or MaxAllocs passed:\n%s", changed.text)
	}
	t.Logf("the changed code's test output:\n%s", lastLines(changed.text, 30))
}

// TestMeasureAllocBaseline measures the exact allocation verdict in the kv
// module: record a baseline, then run the test N times unchanged and N
// times with one more allocation per call of normalizeKey, and log how
// many runs the allocation verdict passes (CPU verdicts are counted apart:
// they are statistical). Run it with
//
//	HOTBUDGET_MEASURE=1 go test ./perfassert -run MeasureAllocBaseline -v -timeout 60m
//
// HOTBUDGET_MEASURE_RUNS sets the unchanged runs (default 20), with 5
// changed ones; HOTBUDGET_MEASURE_RACE=1 builds with -race (a baseline of
// its own).
func TestMeasureAllocBaseline(t *testing.T) {
	if os.Getenv("HOTBUDGET_MEASURE") != "1" {
		t.Skip("a measurement, not a test: set HOTBUDGET_MEASURE=1 to run it")
	}
	n := envInt(t, "HOTBUDGET_MEASURE_RUNS", 20)
	dir := writeKVModule(t, "")
	var flags []string
	if os.Getenv("HOTBUDGET_MEASURE_RACE") == "1" {
		flags = append(flags, "-race")
	}
	buildKV(t, dir, flags...)
	start := time.Now()
	if o := kvRun(t, dir, "kv.test", true); !o.passed {
		t.Fatalf("recording the baseline failed:\n%s", o.text)
	}
	written, _ := filepath.Glob(filepath.Join(dir, "testdata", "*"))
	t.Logf("baseline %v recorded in %v", written, time.Since(start).Round(time.Millisecond))
	for _, c := range []struct {
		name, bin string
		runs      int
	}{{"unchanged", "kv.test", n}, {"one more allocation per call", "kvextraalloc.test", 5}} {
		var allocFail, lineFail, cpuFail int
		for i := 0; i < c.runs; i++ {
			o := kvRun(t, dir, c.bin, false)
			if o.allocsRegressed {
				allocFail++
			}
			if o.maxAllocsLine {
				lineFail++
			}
			if o.cpuRegressed {
				cpuFail++
			}
			if c.name == "unchanged" && (o.allocsRegressed || o.maxAllocsLine) {
				t.Logf("unchanged run %d failed on allocations:\n%s", i+1, o.text)
			}
		}
		t.Logf("%s: allocation verdict failed %d of %d naming normalizeKey, MaxAllocs failed naming its line %d of %d; CPU verdict failed %d of %d",
			c.name, allocFail, c.runs, lineFail, c.runs, cpuFail, c.runs)
	}
}
