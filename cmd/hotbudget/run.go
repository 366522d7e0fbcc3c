package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/ghactions"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/input"
	"github.com/hotbudget/hotbudget/internal/textfmt"
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
// character, even where a writer forgot to escape it. Only ghactions.Runner
// writes workflow commands, through errGuard.Command (c.github); only binary output
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
	if all, err := input.Globs(paths); err == nil {
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

// github is the GitHub Actions runner the command reports to.
func (c *cli) github() ghactions.Runner { return ghactions.Runner{Getenv: c.getenv, Guard: c.errGuard} }
