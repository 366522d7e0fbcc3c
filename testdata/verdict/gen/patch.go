package main

import (
	"fmt"
	"os"
	"strings"
)

// The A/B change of node-lib: acorn's pp.getTokenFromCode (about 3-4% of
// self time parsing acorn.js) does about 50% more of its own work. On every
// token that starts at an even offset it first hashes the next two
// characters of the input into a module-level sink (work of its own,
// inlined in its body, with no effect on what it returns). Everything else
// in acorn is unchanged. Measured before recording: the function's self
// time grows by 40-55% (K=2 below); K=4 doubled it.
const (
	acornAnchor = "  pp.getTokenFromCode = function(code) {\n"
	acornPatch  = `  var hbSink = 0; // hotbudget verdict benchmark, variant B
  pp.getTokenFromCode = function(code) {
    if ((this.pos & 1) === 0) {
      var hbHash = code;
      for (var hbK = 1; hbK <= 2; hbK++) { hbHash = (hbHash * 31 + this.input.charCodeAt(this.pos + hbK)) | 0; }
      hbSink ^= hbHash;
    }
`
)

// patchAcorn applies the change to acorn's dist/acorn.js at path.
func patchAcorn(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	if n := strings.Count(s, acornAnchor); n != 1 {
		return fmt.Errorf("%s: found the function to patch %d times, want once (is it %s?)", path, n, acornPkg)
	}
	return os.WriteFile(path, []byte(strings.Replace(s, acornAnchor, acornPatch, 1)), 0o644)
}
