package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/loaders"
)

// Exit codes: part of the CLI's interface.
const (
	exitOK    = 0 // success; nothing regressed; every rule passed
	exitFail  = 1 // a regression was found or a budget rule failed
	exitUsage = 2 // usage or input error
)

// version is the release this source tree is; `go install ...@vX` builds
// report the module version from the build information instead.
const version = "v0.1.0-dev"

// readBuildInfo is replaced in tests so that golden output does not depend
// on how the test binary was built.
var readBuildInfo = debug.ReadBuildInfo

func versionString() string {
	if bi, ok := readBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

// cli carries the process's surroundings so that run is testable in-process.
//
// stdout and stderr are Guards (textfmt.Guard): every line any writer
// prints passes through one, so that no text from a profile can forge a
// GitHub Actions workflow command or reach the terminal as a control
// character, even where a writer forgot to escape it. Only reportGitHub
// writes workflow commands, through errGuard.Command; only binary output
// (convert --to pprof to "-") goes to rawStdout.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	errGuard       *textfmt.Guard
	rawStdout      io.Writer
	getenv         func(string) string
}

type command struct {
	name    string
	summary string
	run     func(c *cli, args []string) int
}

var commands []command

func init() {
	commands = []command{
		{"top", "show the functions with the most self time", (*cli).top},
		{"convert", "convert a profile to pprof, speedscope or folded stacks", (*cli).convert},
		{"diff", "compare profiles against baseline profiles, function by function", (*cli).diff},
		{"bench", "compare two `go test -bench` outputs", (*cli).bench},
		{"record", "benchmark and profile two git revisions, interleaved, and gate", (*cli).record},
		{"merge", "judge the shards of a record (record --shard K/N) as one record", (*cli).merge},
		{"check", "check profiles against the limits of a budget file", (*cli).check},
		{"history", "keep record's results per commit in git notes; show trends and change points", (*cli).history},
		{"version", "print the version", (*cli).versionCmd},
	}
}

const mainUsage = `hotbudget catches performance regressions in CPU profiles and traces.

Usage:

	hotbudget <command> [flags] [arguments]

Commands:
%s
Profiles may be Go pprof, V8/Node .cpuprofile, Chrome trace-event JSON,
speedscope JSON, folded stacks or Go execution traces, gzipped or not; the
format is detected from the content.

Exit status: 0 pass, 1 regression found or budget rule failed, 2 usage or
input error.

Examples:

	hotbudget top testdata/pprof/busy.pb.gz
	hotbudget diff base/*.pb.gz -- head/*.pb.gz
	hotbudget record origin/main HEAD ./...
	hotbudget check --budget perf-budget.yaml cpu.pprof

Run 'hotbudget <command> --help' for a command's flags.
`

func (c *cli) mainUsage(w io.Writer) {
	var b strings.Builder
	for _, cmd := range commands {
		fmt.Fprintf(&b, "\t%-8s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintf(w, mainUsage, b.String())
}

// run is main without the process: it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	out, errs := textfmt.NewGuard(stdout), textfmt.NewGuard(stderr)
	defer errs.Flush()
	defer out.Flush()
	c := &cli{stdin: stdin, stdout: out, stderr: errs, errGuard: errs, rawStdout: stdout, getenv: getenv}
	if len(args) == 0 {
		c.mainUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if args[0] == "help" && len(args) > 1 {
			return c.dispatch([]string{args[1], "--help"})
		}
		c.mainUsage(stdout)
		return exitOK
	case "-version", "--version":
		return c.versionCmd(nil)
	}
	return c.dispatch(args)
}

func (c *cli) dispatch(args []string) int {
	for _, cmd := range commands {
		if cmd.name == args[0] {
			return cmd.run(c, args[1:])
		}
	}
	if strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(c.stderr, "hotbudget: unknown flag %s\nRun 'hotbudget --help' for usage.\n", args[0])
	} else {
		fmt.Fprintf(c.stderr, "hotbudget: unknown command %q\nRun 'hotbudget --help' for usage.\n", textfmt.Shorten(args[0], textfmt.MaxName))
	}
	return exitUsage
}

const versionUsage = `Usage: hotbudget version

Prints the version of hotbudget: the module version when installed with
'go install github.com/hotbudget/hotbudget/cmd/hotbudget@VERSION', else the
version of this source tree. 'hotbudget --version' does the same.
`

func (c *cli) versionCmd(args []string) int {
	fs := c.flagSet("version", versionUsage)
	pos, code := c.parse(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		return c.usageErr("version", "unexpected arguments %q", pos)
	}
	fmt.Fprintf(c.stdout, "hotbudget %s\n", versionString())
	return exitOK
}

// cmdFlags is a subcommand's flags and help text.
type cmdFlags struct {
	*flag.FlagSet
	usage string
	// brief names flags that the help lists by name only, after the
	// others, with briefNote: the comparison flags a command shares with
	// another command whose help describes them.
	brief     map[string]bool
	briefNote string
}

// flagSet returns a FlagSet whose errors and help run reports itself.
func (c *cli) flagSet(name, usage string) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // the flag package calls it on every error
	return &cmdFlags{FlagSet: fs, usage: usage}
}

// printUsage writes a command's help text and flags to stdout.
func (c *cli) printUsage(fs *cmdFlags) {
	fmt.Fprint(c.stdout, fs.usage)
	if !hasFlags(fs.FlagSet) {
		return
	}
	fmt.Fprint(c.stdout, "\nFlags:\n")
	shown := fs.FlagSet
	var brief []string
	if len(fs.brief) > 0 {
		shown = flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		fs.VisitAll(func(f *flag.Flag) {
			if fs.brief[f.Name] {
				brief = append(brief, "--"+f.Name)
				return
			}
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue
		})
	}
	shown.SetOutput(c.stdout)
	shown.PrintDefaults()
	shown.SetOutput(io.Discard)
	if len(brief) > 0 {
		fmt.Fprintf(c.stdout, "\n%s:\n  %s\n", fs.briefNote, strings.Join(brief, " "))
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parse parses flags anywhere among the arguments (flags may follow file
// names); everything after "--" is positional. It returns the positional
// arguments and -1, or an exit code when parsing ended the command (--help
// or a bad flag).
func (c *cli) parse(fs *cmdFlags, args []string) ([]string, int) {
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.printUsage(fs)
			return nil, exitOK
		}
		if err != nil {
			return nil, c.usageErr(fs.Name(), "%v", err)
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), -1
		}
		if len(rest) == 0 {
			return pos, -1
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageErr reports a usage error and returns exitUsage.
func (c *cli) usageErr(cmd, format string, args ...any) int {
	fmt.Fprintf(c.stderr, "hotbudget %s: %s\nRun 'hotbudget %s --help' for usage.\n", cmd, textfmt.Lines(fmt.Sprintf(format, args...)), cmd)
	return exitUsage
}

// inputErr reports an input error (the error names the file) and returns exitUsage.
func (c *cli) inputErr(cmd string, err error) int {
	// "hotbudget diff: diff: ...": the library's name where it repeats the
	// command's is dropped.
	fmt.Fprintf(c.stderr, "hotbudget %s: %s\n", cmd, textfmt.Lines(gate.FlagText(strings.TrimPrefix(err.Error(), cmd+": "))))
	return exitUsage
}

// noTimeErr reports err as inputErr does, naming the files when it is
// analysis.CheckTime's error (no time selected) passed on by the libraries,
// which do not know them: files maps each side the error may name ("base",
// "head", or "" for profiles measured alone) to its paths, whose globs are
// expanded as they were when loaded. It returns exitUsage.
func (c *cli) noTimeErr(cmd string, err error, files map[string][]string) int {
	var e *analysis.NoTimeError
	if !errors.As(err, &e) {
		return c.inputErr(cmd, err)
	}
	paths, ok := files[e.Side]
	if all, err := expandGlobs(paths); err == nil {
		paths = all
	}
	if !ok || len(paths) != e.Profiles {
		return c.inputErr(cmd, err)
	}
	// The wrappers' messages were made with e's: e's is replaced in them,
	// and the library's own name is dropped where it repeats the
	// command's ("hotbudget diff: diff: ").
	named := *e
	named.Files = paths
	msg := strings.Replace(err.Error(), e.Error(), named.Error(), 1)
	fmt.Fprintf(c.stderr, "hotbudget %s: %s\n", cmd, strings.TrimPrefix(msg, cmd+": "))
	return exitUsage
}

// load reads a profile and prints its loader warnings to stderr.
func (c *cli) load(cmd, path string, opts ...loaders.Option) (*profile.Profile, error) {
	p, err := loaders.Load(path, opts...)
	if err != nil {
		return nil, err
	}
	for _, w := range loaders.Warnings(p) {
		fmt.Fprintf(c.stderr, "hotbudget %s: warning: %s: %s\n", cmd, textfmt.Line(path), textfmt.Line(w))
	}
	return p, nil
}

// loadIndex reads and indexes a profile (loaders.LoadIndex: a Go profile is
// decoded straight into the Index) and prints its loader warnings to
// stderr.
func (c *cli) loadIndex(cmd, path string, opts ...loaders.Option) (*analysis.Index, error) {
	x, err := loaders.LoadIndex(path, opts...)
	if err != nil {
		return nil, err
	}
	for _, w := range x.Warnings() {
		fmt.Fprintf(c.stderr, "hotbudget %s: warning: %s: %s\n", cmd, textfmt.Line(path), textfmt.Line(w))
	}
	return x, nil
}

// loadAll expands globs and loads every profile. A warning that several
// files share is printed once, naming the first file and how many more.
func (c *cli) loadAll(cmd string, paths []string, sel selection) ([]*profile.Profile, error) {
	files, err := expandGlobs(paths)
	if err != nil {
		return nil, err
	}
	ps, warnings, err := loadFiles(files, func(f string) (*profile.Profile, []string, error) {
		p, err := loaders.Load(f, sel.loadOptions()...)
		if err != nil {
			return nil, nil, err
		}
		return p, loaders.Warnings(p), nil
	})
	if err != nil {
		return nil, err
	}
	c.printWarnings(cmd, files, warnings)
	return ps, nil
}

// loadIndexes expands the globs of each list of paths and indexes every
// profile (loaders.LoadIndex: Go profiles are decoded straight into the
// Index), all lists at once, then prints each list's warnings as loadAll
// does.
func (c *cli) loadIndexes(cmd string, sel selection, lists ...[]string) ([][]*analysis.Index, error) {
	var files []string
	var ends []int
	for _, paths := range lists {
		fs, err := expandGlobs(paths)
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
		ends = append(ends, len(files))
	}
	xs, warnings, err := loadFiles(files, func(f string) (*analysis.Index, []string, error) {
		x, err := loaders.LoadIndex(f, sel.loadOptions()...)
		if err != nil {
			return nil, nil, err
		}
		return x, x.Warnings(), nil
	})
	if err != nil {
		return nil, err
	}
	out := make([][]*analysis.Index, len(lists))
	start := 0
	for i, end := range ends {
		out[i] = xs[start:end:end]
		c.printWarnings(cmd, files[start:end], warnings[start:end])
		start = end
	}
	return out, nil
}

// loadFiles loads every file with load, several at once (as many as there
// are processors, and only as many as fit together in the memory budget
// of loadBudget), and returns them in order with each file's loader
// warnings; the error is the first file's in order.
func loadFiles[T any](files []string, load func(string) (T, []string, error)) ([]T, [][]string, error) {
	return loadFilesWithin(files, runtime.GOMAXPROCS(0), loadBudget(), loadCost, load)
}

// loadFilesWithin is loadFiles with workers goroutines, a budget of bytes
// (0: none) and the cost of loading a file.
func loadFilesWithin[T any](files []string, workers int, budget int64, cost func(string) int64,
	load func(string) (T, []string, error)) ([]T, [][]string, error) {
	out := make([]T, len(files))
	warnings := make([][]string, len(files))
	errs := make([]error, len(files))
	sem := newByteSem(budget)
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				w := sem.acquire(cost(files[i]))
				out[i], warnings[i], errs[i] = load(files[i])
				sem.release(w)
			}
		}()
	}
	for i := range files {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return out, warnings, nil
}

// loadBudget is how much memory the loads that run at once may take
// together, as loadCost estimates it: what one load may take
// (membudget.ForLimit of the loaders' limit, membudget.InputLimit); 0 when
// there is no limit.
func loadBudget() int64 {
	limit, err := membudget.InputLimit(0)
	if err != nil {
		return 0
	}
	if m := membudget.ForLimit(limit); m != nil {
		return m.Max
	}
	return 0
}

// loadCost estimates the memory that loading the file at path takes,
// before reading it: its decompressed size (the size on disk, or a gzip
// file's trailer, whichever is more) times what parsing ordinary profiles
// takes per byte. A trailer that lies only lets a file load beside
// others: each load is bounded by its own budget as it reads.
func loadCost(path string) int64 {
	const perByte = membudget.Ratio / 2
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	n := fi.Size()
	var b [4]byte
	if _, err := f.ReadAt(b[:2], 0); err == nil && b[0] == 0x1f && b[1] == 0x8b && n >= 18 {
		if _, err := f.ReadAt(b[:], n-4); err == nil {
			n = max(n, int64(binary.LittleEndian.Uint32(b[:])))
		}
	}
	return min(n, math.MaxInt64/perByte) * perByte
}

// byteSem is a semaphore of bytes: acquire waits until the weight fits
// beside what others hold. A weight larger than the whole budget waits
// until nothing else is held. A nil byteSem never waits.
type byteSem struct {
	mu   sync.Mutex
	cond *sync.Cond
	size int64
	held int64
}

func newByteSem(size int64) *byteSem {
	if size <= 0 {
		return nil
	}
	s := &byteSem{size: size}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// acquire takes w bytes (at most the whole budget) and returns what it took.
func (s *byteSem) acquire(w int64) int64 {
	if s == nil {
		return 0
	}
	w = min(max(w, 0), s.size)
	s.mu.Lock()
	for s.held+w > s.size {
		s.cond.Wait()
	}
	s.held += w
	s.mu.Unlock()
	return w
}

func (s *byteSem) release(w int64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.held -= w
	s.mu.Unlock()
	s.cond.Broadcast()
}

// printWarnings prints the loader warnings of files. A warning that
// several files share is printed once, naming the first file and how many
// more.
func (c *cli) printWarnings(cmd string, files []string, warnings [][]string) {
	var order []string
	where := map[string][]string{}
	for i, f := range files {
		for _, w := range warnings[i] {
			if where[w] == nil {
				order = append(order, w)
			}
			where[w] = append(where[w], f)
		}
	}
	for _, w := range order {
		fs := where[w]
		name := fs[0]
		if len(fs) > 1 {
			name = fmt.Sprintf("%s and %d more", fs[0], len(fs)-1)
		}
		fmt.Fprintf(c.stderr, "hotbudget %s: warning: %s: %s\n", cmd, textfmt.Line(name), textfmt.Line(w))
	}
}

// expandGlobs expands shell patterns among paths (for shells and CI
// systems that pass them unexpanded); a pattern that matches nothing is an error.
func expandGlobs(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if !strings.ContainsAny(p, "*?[") {
			out = append(out, p)
			continue
		}
		if _, err := os.Stat(p); err == nil { // a real file with a strange name
			out = append(out, p)
			continue
		}
		m, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("bad pattern %q: %w", p, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no files match", p)
		}
		sort.Strings(m)
		out = append(out, m...)
	}
	return out, nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// choiceFlag is a string flag limited to a closed set of values.
type choiceFlag struct {
	value   string
	choices []string
}

// viewFlag defines --view, what a Chrome trace contributes, on fs.
func viewFlag(fs *flag.FlagSet) *choiceFlag {
	view := newChoice("", "samples", "durations")
	fs.Var(view, "view", "what a Chrome trace contributes: `samples|durations` (default: samples when it has any)")
	return view
}

func newChoice(def string, choices ...string) *choiceFlag {
	return &choiceFlag{value: def, choices: choices}
}

func (f *choiceFlag) String() string {
	if f == nil {
		return ""
	}
	return f.value
}

func (f *choiceFlag) Set(s string) error {
	for _, c := range f.choices {
		if s == c {
			f.value = s
			return nil
		}
	}
	return fmt.Errorf("must be one of %s", strings.Join(f.choices, ", "))
}

// parsePercent parses "10%" (or "10") into 0.10.
func parsePercent(s string) (float64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v != v {
		return 0, fmt.Errorf("bad percentage %q (want e.g. 10%%)", s)
	}
	return v / 100, nil
}
