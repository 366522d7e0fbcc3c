package perfassert_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/limits"
	"github.com/hotbudget/hotbudget/loaders"
)

// The third-party golden-baseline measurement (issue 15): a real JSON
// parser from the module proxy, which the project never used, with a perf
// test at default settings written as a new user would; its ObjectEach
// (about 9% of the capture's self time) is made slower by hashing a few
// bytes of its input first, under a build tag.
const (
	tpModule  = "github.com/buger/jsonparser"
	tpVersion = "v1.1.1"
	tpFunc    = "ObjectEach"
	tpDecl    = "func ObjectEach(data []byte, callback func(key []byte, value []byte, dataType ValueType, offset int) error, keys ...string) (err error) {\n"
	tpSlowFmt = `//go:build hbslow

package jsonparser

const hbSlowBytes = %d
`
	tpFast = `//go:build !hbslow

package jsonparser

const hbSlowBytes = 0
`
	tpSlowCode = `	if hbSlowBytes > 0 {
		h := hbSlowSink
		for i := 0; i < len(data) && i < hbSlowBytes; i++ {
			h = h*31 + uint32(data[i])
		}
		hbSlowSink = h
	}
`
	tpTest = `package jsonparser

import (
	"os"
	"strconv"
	"strings"
	"testing"

)

var hbSlowSink uint32

func hbInput(n int) []byte {
	var b strings.Builder
	b.WriteString(` + "`" + `{"items":[` + "`" + `)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(` + "`" + `{"id":` + "`" + ` + strconv.Itoa(i*7919) + ` + "`" + `,"name":"item \"` + "`" + ` + strconv.Itoa(i) + ` + "`" + `\" \u00e9t\u00e9","tags":["a","bb","ccc"],"price":` + "`" + ` + strconv.Itoa(i%%1000) + ` + "`" + `.25,"ok":true,"nested":{"x":` + "`" + ` + strconv.Itoa(i) + ` + "`" + `,"y":"zz"}}` + "`" + `)
	}
	b.WriteString(` + "`" + `]}` + "`" + `)
	return []byte(b.String())
}

var hbData = hbInput(2000)

var hbSink int64

func hbWork() {
	var sum int64
	ArrayEach(hbData, func(value []byte, dataType ValueType, offset int, err error) {
		ObjectEach(value, func(key []byte, v []byte, t ValueType, off int) error {
			switch t {
			case Number:
				if n, err := ParseInt(v); err == nil {
					sum += n
				}
			case String:
				s, _ := ParseString(v)
				sum += int64(len(s))
			}
			return nil
		})
		if x, err := GetInt(value, "nested", "x"); err == nil {
			sum += x
		}
	}, "items")
	hbSink += sum
}

func TestParseMatchesBaseline(t *testing.T) {
	p := perfassert.Capture(t, hbWork%s)
	perfassert.MatchBaseline(t, "testdata/parse.pb.gz", p)
	if out := os.Getenv("CAPTURE_OUT"); out != "" && p != nil {
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := p.Write(f); err != nil {
			t.Fatal(err)
		}
	}
}
`
)

// TestMeasureThirdPartyGolden measures the golden-baseline flow on a real
// third-party module at default settings: record a baseline, run the
// unchanged test HOTBUDGET_MEASURE_AA times (default 20; every other run
// beside a goroutine of this process burning a CPU, so that captures split
// into runs differently) and the test with ObjectEach slower
// HOTBUDGET_MEASURE_RUNS times (default 5), and log pass/fail, the
// functions named, the seconds per test and the machine's load. It asserts
// nothing: run it with
//
//	HOTBUDGET_MEASURE=1 go test ./perfassert -run MeasureThirdParty -v -timeout 30m
//
// It downloads the module with `go mod download` (the module proxy);
// HOTBUDGET_MEASURE_SLOW sets how many bytes ObjectEach hashes first (default
// 30: its share went from about 8.5% to 11.4% at load 20 on 2 cores,
// about 38% more time in it; 26 bytes gave about 20%, 36 about 60%: the
// log shows the shares);
// HOTBUDGET_MEASURE_OPTS adds Capture options, as Go source
// ("perfassert.MaxDuration(6*time.Second)"); HOTBUDGET_MEASURE_KEEP names a
// directory that keeps every capture (numbered, named by the test binary:
// jp is unchanged, jphbslow slower), so that other pairings can be judged
// afterwards.
func TestMeasureThirdPartyGolden(t *testing.T) {
	if os.Getenv("HOTBUDGET_MEASURE") != "1" {
		t.Skip("a measurement, not a test: set HOTBUDGET_MEASURE=1 to run it")
	}
	aa := envInt(t, "HOTBUDGET_MEASURE_AA", 20)
	n := envInt(t, "HOTBUDGET_MEASURE_RUNS", 5)
	slow := envInt(t, "HOTBUDGET_MEASURE_SLOW", 30)
	opts := "" // default settings
	if o := os.Getenv("HOTBUDGET_MEASURE_OPTS"); o != "" {
		opts = ", " + o
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "mod", "download", "-json", tpModule+"@"+tpVersion).Output()
	if err != nil {
		t.Fatalf("go mod download: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download: %v: %s", err, out)
	}
	dir := t.TempDir()
	if w := os.Getenv("HOTBUDGET_MEASURE_WORKDIR"); w != "" {
		dir = w // kept, to run its test binaries by hand
	}
	if out, err := exec.Command("cp", "-r", mod.Dir+"/.", dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	if out, err := exec.Command("chmod", "-R", "u+w", dir).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v: %s", err, out)
	}
	src, err := os.ReadFile(filepath.Join(dir, "parser.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), tpDecl) {
		t.Fatalf("%s@%s: parser.go has no %s as expected", tpModule, tpVersion, tpFunc)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"parser.go":  strings.Replace(string(src), tpDecl, tpDecl+tpSlowCode, 1),
		"go.mod":     fmt.Sprintf("module %s\n\ngo 1.26.0\n\nrequire github.com/hotbudget/hotbudget v0.0.0-00010101000000-000000000000\n\nreplace github.com/hotbudget/hotbudget => %s\n", tpModule, root),
		"go.sum":     string(sum),
		"hb_fast.go": tpFast,
		"hb_slow.go": fmt.Sprintf(tpSlowFmt, slow),
		"hb_test.go": fmt.Sprintf(tpTest, opts),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=m", "GIT_AUTHOR_EMAIL=m@example.com", "GIT_COMMITTER_NAME=m", "GIT_COMMITTER_EMAIL=m@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "jsonparser with a perf test")
	for _, tags := range []string{"", "hbslow"} {
		if text, _, err := goTest(t, dir, nil, "-c", "-o", "jp"+tags+".test", "-tags="+tags, "."); err != nil {
			t.Fatalf("go test -c: %v\n%s", err, text)
		}
	}
	capLine := regexp.MustCompile(`capture of TestParseMatchesBaseline: (\d+) samples in (\d+) runs, ([0-9.]+m?s) wall`)
	keep := os.Getenv("HOTBUDGET_MEASURE_KEEP") // a directory that keeps every capture
	captures := 0
	run := func(bin string, update bool) (passed bool, named []string, took time.Duration, info string, share float64) {
		capture := filepath.Join(t.TempDir(), "capture.pb.gz")
		if keep != "" {
			captures++
			capture = filepath.Join(keep, fmt.Sprintf("%02d-%s.pb.gz", captures, strings.TrimSuffix(bin, ".test")))
		}
		text, took, named, err := runCaptureTest(dir, bin, "TestParseMatchesBaseline", capture, update, tpModule+".")
		if m := capLine.FindStringSubmatch(text); m != nil {
			info = fmt.Sprintf("%s samples in %s runs, %s capture", m[1], m[2], m[3])
		}
		if p, lerr := loaders.Load(capture); lerr == nil {
			if r, cerr := limits.Check(p, tpModule+"."+tpFunc, limits.Limit{Quantity: limits.SelfShare, Share: 1}); cerr == nil {
				share = r.Share
			}
		}
		if err != nil || update {
			t.Logf("%s: %v\n%s", bin, err, lastLines(text, 16))
		}
		return err == nil, named, took, info, share
	}
	load := func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		f := strings.Fields(string(b))
		if len(f) < 1 {
			return "?"
		}
		return f[0]
	}
	if ok, _, took, info, _ := run("jp.test", true); !ok {
		t.Fatal("recording the baseline failed")
	} else {
		t.Logf("baseline recorded in %v (%s), load %s", took, info, load())
	}
	var burning atomic.Bool
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		var x uint64
		for {
			select {
			case <-stop:
				return
			default:
			}
			if !burning.Load() {
				time.Sleep(time.Millisecond)
				continue
			}
			for range 100000 {
				x = x*6364136223846793005 + 1
			}
			spinSink.Add(x & 1)
		}
	}()
	runtime.Gosched()
	for _, c := range []struct {
		name, bin string
		n         int
	}{{"unchanged", "jp.test", aa}, {tpFunc + " slower", "jphbslow.test", n}} {
		var pass, exact int
		var times []string
		var shares float64
		for i := 0; i < c.n; i++ {
			burning.Store(c.name == "unchanged" && i%2 == 1)
			ok, named, took, info, pi := run(c.bin, false)
			burning.Store(false)
			if ok {
				pass++
			}
			if len(named) == 1 && named[0] == tpFunc {
				exact++
			}
			shares += pi
			times = append(times, fmt.Sprintf("%.2fs", took.Seconds()))
			t.Logf("%s run %d: passed %v, regressed %v, %v (%s; %s self share %.1f%%), load %s, beside a burner %v", c.name, i+1, ok, named, took, info, tpFunc, 100*pi, load(), c.name == "unchanged" && i%2 == 1)
		}
		t.Logf("%s: %d of %d passed, %d named %s alone; test times %s; mean %s self share %.2f%%", c.name, pass, c.n, exact, tpFunc, strings.Join(times, " "), tpFunc, 100*shares/float64(c.n))
	}
}
