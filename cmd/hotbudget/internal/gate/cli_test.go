package gate

// The command's end-to-end helpers for the engine's tests: hotbudget built
// once from ../.. and run as a user runs it.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// result is what one run of the CLI produced.
type result struct {
	stdout, stderr string
	code           int
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
	cmdDir  = func() string { d, _ := filepath.Abs("../.."); return d }()
)

// build builds cmd/hotbudget once for the package's tests.
func build() {
	dir, err := os.MkdirTemp("", "hotbudget-gate-test-")
	if err != nil {
		binErr = err
		return
	}
	binPath = filepath.Join(dir, "hotbudget")
	cmd := exec.Command("go", "build", "-o", binPath, ".")
	cmd.Dir = cmdDir
	if out, err := cmd.CombinedOutput(); err != nil {
		binErr = &buildErr{err, string(out)}
	}
}

type buildErr struct {
	err error
	out string
}

func (e *buildErr) Error() string { return e.err.Error() + "\n" + e.out }

// envKeys are the variables the command reads through its getenv, which a
// test's getenv sets: the rest of the environment is the test's own
// (t.Setenv reaches the loaders' HOTBUDGET_MAX_BYTES).
var envKeys = []string{"HOTBUDGET_SAMPLER", "HOTBUDGET_SAMPLER_CHECK", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"}

// run runs the built command with args in the current directory, as the
// command's run does in its own tests, with the variables of envKeys as
// getenv gives them.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	bin := hotbudgetBinNoT()
	cmd := exec.Command(bin, args...)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(envKeys, k) {
			continue // the command reads these through getenv
		}
		env = append(env, kv)
	}
	for _, k := range envKeys {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		io.WriteString(stderr, err.Error())
		return -1
	}
	return 0
}

// hotbudgetBinNoT is the command built (build); a build error panics,
// failing the test that ran it.
func hotbudgetBinNoT() string {
	binOnce.Do(build)
	if binErr != nil {
		panic("go build ./cmd/hotbudget: " + binErr.Error())
	}
	return binPath
}

// TestMain clears git's environment (testutil.ClearGitEnv), runs the
// tests and removes the command they built.
func TestMain(m *testing.M) {
	testutil.ClearGitEnv()
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// recordIn runs hotbudget record in dir.
func recordIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"record"}, args...), strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	t.Logf("hotbudget record %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// verdicts reads the function rows of record's text report: name ->
// verdict, from the full tables (--full) or the short report's lines of
// the functions regressed and near misses.
func verdicts(out string) map[string]string {
	funcs, _, _ := strings.Cut(out, "\nbenchmark results")
	v := map[string]string{}
	row := regexp.MustCompile(`(?m)^\s*\S+\s+\S+\s+\S+\s+\S+\s+(regressed|improved|unchanged|new|gone)\s+(\S+)$`)
	for _, m := range row.FindAllStringSubmatch(funcs, -1) {
		v[m[2]] = m[1]
	}
	short := regexp.MustCompile(`(?m)^      (regressed|near miss) (\S+) [-+]`)
	for _, m := range short.FindAllStringSubmatch(funcs, -1) {
		v[m[2]] = m[1]
	}
	return v
}

// runOK runs hotbudget in the repository root and returns its stdout.
func runOK(t *testing.T, want int, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(args, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" }); code != want {
		t.Fatalf("hotbudget %q: exit %d, want %d\n%s%s", args, code, want, stdout.String(), stderr.String())
	}
	return stdout.String()
}

const exitUsage = 2 // the command's exit status for usage and input errors

// configOf is the Config and shard settings that record's flags in args
// give, for the flags these tests use (--instrument and its shorthands,
// --runs, --count, --benchtime, --no-allocs, --shard, --out, --format; any other
// --flag value is a judgement's, kept in the settings and not applied
// here); the command's own tests check the flags themselves
// (TestShardSettingsRoundTrip).
func configOf(t testing.TB, args []string) (Config, *ShardSettings) {
	t.Helper()
	o := Config{Runs: 5, Count: 1, Bench: ".", Benchtime: "1s", Instrument: "time"}
	var pos []string
	var judge []JudgeFlag
	given := ""
	benchtimeSet := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			i++
			if i >= len(args) {
				t.Fatalf("%q: %s wants a value", args, a)
			}
			return args[i]
		}
		switch a {
		case "--instrument":
			o.Instrument = next()
			given = "--instrument " + o.Instrument
		case "--instructions", "--cycles", "--time":
			o.Instrument = a[2:]
			given = a
		case "--runs":
			fmt.Sscan(next(), &o.Runs)
			o.RunsSet = true
		case "--count":
			fmt.Sscan(next(), &o.Count)
			o.CountSet = true
		case "--no-allocs":
			o.NoAllocs = true
		case "--shard":
			if err := o.Shard.Set(next()); err != nil {
				t.Fatal(err)
			}
		case "--out":
			o.Out = next()
		case "--benchtime":
			o.Benchtime = next()
			if n, ok := strings.CutSuffix(o.Benchtime, "x"); ok {
				fmt.Sscan(n, &o.FixedIters)
			} else {
				d, err := time.ParseDuration(o.Benchtime)
				if err != nil {
					t.Fatal(err)
				}
				o.Target = d
			}
			benchtimeSet = true
		case "--format", "--budget", "--html", "--allocs-html":
			next() // where and how long it ran, and the report: not settings
		case "--keep", "--full":
		default:
			if strings.HasPrefix(a, "--") {
				// A judgement's flag: in the settings, as record logs it.
				judge = append(judge, JudgeFlag{Flag: a[2:], Value: next()})
				continue
			}
			pos = append(pos, a)
		}
	}
	slices.SortStableFunc(judge, func(a, b JudgeFlag) int { return strings.Compare(a.Flag, b.Flag) })
	if len(pos) > 2 {
		o.Packages = pos[2:]
	} else {
		o.Packages = []string{"./..."}
	}
	o.Instructions = o.Instrument != "time"
	o.Cycles = o.Instrument == "cycles"
	switch {
	case o.Cycles:
		o.Why = "estimating cycles (callgrind's cache simulation, a fixed CI runner's caches): chosen by " + given
	case o.Instructions:
		o.Why = "counting instructions (callgrind): chosen by " + given
	case given == "":
		o.Why = "timing: --runs is time's (counting instructions, exact, is the default where valgrind runs)"
	default:
		o.Why = "timing: chosen by " + given
	}
	if o.Instructions && !benchtimeSet {
		o.Benchtime = ExactBenchtime.String()
	}
	if o.Target == 0 && o.FixedIters == 0 {
		if o.Target, _ = time.ParseDuration(o.Benchtime); o.Target == 0 {
			o.Target = time.Second
		}
	}
	o.Procs = runtime.GOMAXPROCS(0)
	s := &ShardSettings{Runs: o.Runs, Count: o.Count, Bench: o.Bench, Benchtime: o.Benchtime,
		Instructions: o.Instructions, Cycles: o.Cycles, NoAllocs: o.NoAllocs, Packages: o.Packages, Judge: judge}
	return o, s
}

// testSettings is configOf's Config of a shard's settings, for reading
// shards without the command's flags.
func testSettings(s *ShardSettings, base, head string, k, n int) (Config, struct{}, error) {
	o := Config{Runs: s.Runs, Count: s.Count, Bench: s.Bench, Benchtime: s.Benchtime, Instructions: s.Instructions,
		Cycles: s.Cycles, NoAllocs: s.NoAllocs, Packages: s.Packages, Shard: ShardSpec{k, n}}
	return o, struct{}{}, nil
}

// judged judges res as record does with no judgement flags and returns its
// report in format (full: every table), the error's text and the exit
// code (2 for an error).
func judged(t testing.TB, res *Measurement, format string, full bool) (string, string, int) {
	t.Helper()
	v, err := Judge(res, Judgement{GateModules: true})
	if err != nil {
		return "", err.Error(), exitUsage
	}
	var b bytes.Buffer
	if err := v.Write(&b, format, full); err != nil {
		t.Fatal(err)
	}
	return b.String(), "", v.Exit
}

// reportOf writes the report of a time measurement res judged into funcs,
// benches and allocs, in format (full: every table), and returns it with
// its exit code.
func reportOf(t testing.TB, res *Measurement, funcs []*diff.Report, benches *bench.Report, allocs []*diff.AllocReport, format string, full bool) (string, int) {
	t.Helper()
	v := &Verdict{Funcs: funcs, Benches: benches, Allocs: allocs, m: res}
	v.Line, v.Exit = recordVerdict(funcs, benches, allocs)
	var b bytes.Buffer
	if err := v.Write(&b, format, full); err != nil {
		t.Fatal(err)
	}
	return b.String(), v.Exit
}

// fakeRecordOut writes what hotbudget record --out writes for its head:
// bench.txt with runs results and each run's CPU profile of the
// benchmark, where parse takes parseNs and the rest 200ns of each op,
// allocating allocs objects of 16 bytes.
func fakeRecordOut(t *testing.T, dir, commit, bench string, runs int, parseNs float64, allocs int) {
	t.Helper()
	head := filepath.Join(dir, "head")
	var txt strings.Builder
	fmt.Fprintf(&txt, "goos: linux\ngoarch: amd64\npkg: example.com/m\ncpu: Test CPU @ 2GHz\n")
	for r := range runs {
		jitter := 1 + 0.01*float64((r*7)%5-2) // ±2%
		nsOp := (parseNs + 200) * jitter
		fmt.Fprintf(&txt, "%s-2   \t    1000\t%10.1f ns/op\t%8d B/op\t%8d allocs/op\n", bench, nsOp, 16*allocs, allocs)
		fn := []*profile.Function{{ID: 1, Name: "example.com/m.parse"}, {ID: 2, Name: "example.com/m." + bench}}
		locs := []*profile.Location{{ID: 1, Line: []profile.Line{{Function: fn[0]}}}, {ID: 2, Line: []profile.Line{{Function: fn[1]}}}}
		p := &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
			PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 100000,
			Function: fn, Location: locs,
			Sample: []*profile.Sample{
				{Location: []*profile.Location{locs[0], locs[1]}, Value: []int64{1, int64(1000 * parseNs * jitter)}},
				{Location: []*profile.Location{locs[1]}, Value: []int64{1, int64(1000 * 200 * jitter)}},
			},
		}
		meta.Set(p, meta.Record{Name: fmt.Sprintf("example.com/m %s at head HEAD (%.12s), run %d", bench, commit, r+1),
			Build: "go1.26.8 linux/amd64", WorkUnit: meta.WorkOp, Runs: []meta.Run{{Work: 1000}}})
		path := LeafProfile(head, "example.com/m", bench, r+1)
		if err := WriteProfile(path, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(head, "bench.txt"), []byte(txt.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
