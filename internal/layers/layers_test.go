// Package layers holds the test that keeps the module's imports pointing
// one way: internal <- analysis <- loaders <- limits <- diff <- bench <-
// perfassert, budget <- cmd, examples. An internal package never imports a public one, so the
// public packages can change without dragging the internals along.
package layers

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/srcdeps"
)

const module = "github.com/hotbudget/hotbudget"

// rank orders the layers; a package may import only packages of its own
// rank or a lower one (perfassert and budget share one).
func rank(path string) (int, bool) {
	rel, ok := strings.CutPrefix(path, module)
	if !ok {
		return 0, false
	}
	rel = strings.TrimPrefix(rel, "/")
	top, _, _ := strings.Cut(rel, "/")
	switch top {
	case "internal":
		return 0, true
	case "analysis":
		return 1, true
	case "loaders":
		return 2, true
	case "limits":
		return 3, true
	case "diff":
		return 4, true
	case "bench":
		return 5, true
	case "perfassert", "budget":
		return 6, true
	case "cmd", "examples", "testdata":
		return 7, true
	}
	return 8, true // a new top-level package: place it here
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func TestImportsPointOneWay(t *testing.T) {
	srcdeps.Track(t, "../..")
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := 0
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		from, _ := rank(p.ImportPath)
		for _, imp := range p.Imports {
			to, ours := rank(imp)
			if !ours {
				continue
			}
			checked++
			if from == 0 && to != 0 {
				t.Errorf("internal package %s imports the public %s", p.ImportPath, imp)
			} else if to > from {
				t.Errorf("%s imports %s: imports must point down the layers", p.ImportPath, imp)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d imports inside the module checked", checked)
	}
}

// TestCommandDoesNotLinkTesting keeps package testing (and testing/...)
// out of the hotbudget binary: only perfassert, the test-side package, may
// import it, and the CLI reaches the limit engine through limits and budget
// instead. Linking testing would register its flags in the CLI's process
// and grow the binary for nothing.
func TestCommandDoesNotLinkTesting(t *testing.T) {
	srcdeps.Track(t, "../..")
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports", module+"/cmd/hotbudget")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	isTesting := func(path string) bool { return path == "testing" || strings.HasPrefix(path, "testing/") }
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
		if isTesting(p.ImportPath) {
			t.Errorf("cmd/hotbudget links %s", p.ImportPath)
		}
		for _, imp := range p.Imports {
			if isTesting(imp) {
				t.Errorf("%s, a dependency of cmd/hotbudget, imports %s", p.ImportPath, imp)
			}
		}
	}
	// The list holds the command, the packages it needs and the standard
	// library's: far more than this unless go list said nothing.
	if n < 50 {
		t.Fatalf("go list -deps listed only %d packages", n)
	}
}
