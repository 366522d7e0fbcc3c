package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/input"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
	"github.com/hotbudget/hotbudget/loaders"
)

const convertUsage = `Usage: hotbudget convert [--to pprof|speedscope|folded] IN OUT

Reads a profile of any supported format and writes it as a gzipped pprof
profile (opens in 'go tool pprof'), a speedscope JSON file (opens in
speedscope.app) or folded stacks (flamegraph.pl, inferno). Without --to the
format comes from OUT's extension: .pb.gz, .pb, .prof, .pprof: pprof;
.json, .speedscope.json: speedscope; .folded, .collapsed, .txt: folded.
OUT is written atomically; "-" writes to standard output (needs --to).

Examples:

	hotbudget convert testdata/cpuprofile/busy.cpuprofile busy.pb.gz
	go tool pprof -top busy.pb.gz
	hotbudget convert --to folded trace.json - | flamegraph.pl > flame.svg
`

func (c *cli) convert(args []string) int {
	fs := c.flagSet("convert", convertUsage)
	to := newChoice("", "pprof", "speedscope", "folded")
	fs.Var(to, "to", "output format `pprof|speedscope|folded` (default: from OUT's extension)")
	view := viewFlag(fs.FlagSet)
	pos, code := c.parse(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) != 2 {
		return c.usageErr("convert", "want IN and OUT, got %d arguments", len(pos))
	}
	in, out := pos[0], pos[1]
	if err := checkOutputs([]outFile{{"OUT", out}}, []string{in}); err != nil {
		return c.usageErr("convert", "%v", err)
	}
	format := loaders.Format(to.value)
	if format == loaders.FormatUnknown {
		if out == "-" {
			return c.usageErr("convert", "writing to standard output needs --to")
		}
		f, err := formatFromPath(out)
		if err != nil {
			return c.usageErr("convert", "%v", err)
		}
		format = f
	}
	var lopts []loaders.Option
	if view.value != "" {
		lopts = append(lopts, loaders.WithView(loaders.View(view.value)))
	}
	p, err := input.Reader{Stderr: c.stderr, Cmd: "convert"}.Profile(in, lopts...)
	if err != nil {
		return c.inputErr("convert", err)
	}
	if out == "-" {
		w := c.stdout
		if format == loaders.FormatPprof {
			w = c.rawStdout // gzipped protobuf: bytes, not lines
		}
		if err := loaders.Write(w, p, format); err != nil {
			return c.inputErr("convert", fmt.Errorf("writing %s: %w", format, err))
		}
		return exitOK
	}
	if err := atomicfile.Write(out, func(f *os.File) error { return loaders.Write(f, p, format) }); err != nil {
		return c.inputErr("convert", err)
	}
	return exitOK
}

// formatFromPath picks an output format from a file name's extension:
// .pb, .pb.gz, .prof, .pprof → pprof; .speedscope.json, .json → speedscope;
// .folded, .txt, .collapsed → folded.
func formatFromPath(path string) (loaders.Format, error) {
	base := strings.ToLower(filepath.Base(path))
	switch {
	case strings.HasSuffix(base, ".pb.gz"), strings.HasSuffix(base, ".pb"),
		strings.HasSuffix(base, ".prof"), strings.HasSuffix(base, ".pprof"),
		strings.HasSuffix(base, ".pprof.gz"):
		return loaders.FormatPprof, nil
	case strings.HasSuffix(base, ".json"):
		return loaders.FormatSpeedscope, nil
	case strings.HasSuffix(base, ".folded"), strings.HasSuffix(base, ".collapsed"),
		strings.HasSuffix(base, ".txt"):
		return loaders.FormatFolded, nil
	}
	return loaders.FormatUnknown, fmt.Errorf("cannot tell the output format from %q: use .pb.gz, .speedscope.json or .folded, or name it explicitly", path)
}
