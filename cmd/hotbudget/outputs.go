package main

import (
	"fmt"
	"os"

	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/input"
)

// outFile is an output file and the flag or argument that names it.
type outFile struct {
	flag, path string // flag: "--out", "OUT"
}

// checkOutputs refuses outputs that name one of the input files (globs
// expanded), compared with os.SameFile, so that a report or conversion
// never replaces the profile it was made from. An output that does not
// exist yet, "-" (stdout) and "" (not asked for) pass; a pattern that
// matches nothing is left for the loader to report.
func checkOutputs(outs []outFile, inputs []string) error {
	type file struct {
		path string
		fi   os.FileInfo
	}
	var ins []file
	for _, pattern := range inputs {
		paths, err := input.Globs([]string{pattern})
		if err != nil {
			continue
		}
		for _, p := range paths {
			if fi, err := os.Stat(p); err == nil {
				ins = append(ins, file{p, fi})
			}
		}
	}
	for _, o := range outs {
		if o.path == "" || o.path == "-" {
			continue
		}
		fi, err := os.Stat(o.path)
		if err != nil {
			continue
		}
		for _, in := range ins {
			if os.SameFile(fi, in.fi) {
				return fmt.Errorf("%s %s is the input %s: it would be overwritten; write to another file", o.flag, o.path, in.path)
			}
		}
	}
	return nil
}
