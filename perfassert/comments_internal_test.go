package perfassert

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// commentFiles are the files of perfassert that may read or write a
// profile's comments, and why. Everywhere else a capture is a captured
// value (captured.go), its facts typed from the capture to its checks.
var commentFiles = map[string]string{
	"comments.go":      "a capture's comments written when it is made and when it is saved (WriteBaseline), a profile made elsewhere read where it comes in",
	"processes.go":     "baselines recorded in several processes: merged, split and added to",
	"exactbaseline.go": "baselines of counts recorded in several processes",
	// Owned by the helper of issue 42 item 1: its counted allocations'
	// record is set with meta.Set and read back with meta.Known (through
	// the kept facts once attachAllocs keeps them).
	"exactallocs.go": "the counted allocations' record (another owner's file)",
}

// metaAnywhere are internal/meta's names any file may use: the types of a
// capture's facts, the run label, the work units, and the table of kept
// facts. Every other name of meta reads or writes comments.
var metaAnywhere = []string{
	"Record", "Run", "Facts", "WorkUnit", "WorkIteration", "WorkOp", "WorkRun", "LabelRun",
	"Keep", "Kept",
}

// commentSelectors are selectors that reach comments whatever they are
// called on: the profile field, and meta.Record's methods that build
// comments.
var commentSelectors = []string{"Comments", "RunComments", "ProcessParts"}

// TestCommentsOnlyAtBaselines fails when a file of perfassert other than
// commentFiles reads or writes a profile's comments: calls a name of
// internal/meta that does (anything but metaAnywhere), or selects
// Comments, RunComments or ProcessParts, or calls pbuild's readers of
// comments. A capture's facts (runs, iterations, instrument, allocations,
// sampler, depends) go from the capture to the assertions typed.
func TestCommentsOnlyAtBaselines(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	uses := map[string]int{} // file -> uses of comments, in commentFiles
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		metaName, pbuildName := importName(f, "internal/meta"), importName(f, "internal/pbuild")
		_, allowed := commentFiles[path]
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			what := ""
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == metaName && metaName != "" && !slices.Contains(metaAnywhere, sel.Sel.Name) {
				what = "meta." + sel.Sel.Name
			} else if ok && id.Name == pbuildName && pbuildName != "" && (sel.Sel.Name == "Warnings" || sel.Sel.Name == "IsExact") {
				what = "pbuild." + sel.Sel.Name
			} else if slices.Contains(commentSelectors, sel.Sel.Name) {
				what = "." + sel.Sel.Name
			}
			if what == "" {
				return true
			}
			if allowed {
				uses[path]++
				return true
			}
			t.Errorf("%s: %s reads or writes a profile's comments: a capture's facts are typed (captured, meta.Kept); comments are read and written in %s only", fset.Position(sel.Pos()), what, allowedList())
			return true
		})
	}
	if checked < 20 {
		t.Fatalf("checked %d files of perfassert, want all of them", checked)
	}
	t.Logf("uses of comments in the files allowed them: %v", uses)
	if uses["comments.go"] == 0 {
		t.Error("comments.go reads and writes no comments: the test no longer sees them")
	}
	for name := range commentFiles {
		if uses[name] == 0 {
			t.Errorf("%s is allowed to read or write comments and does not: take it off commentFiles", name)
		}
	}
}

// importName is the name under which f imports the package whose path
// ends with suffix, "" when it does not.
func importName(f *ast.File, suffix string) string {
	for _, im := range f.Imports {
		path := strings.Trim(im.Path.Value, `"`)
		if !strings.HasSuffix(path, "/"+suffix) {
			continue
		}
		if im.Name != nil {
			return im.Name.Name
		}
		return filepath.Base(path)
	}
	return ""
}

// allowedList is commentFiles' names, sorted.
func allowedList() string {
	var names []string
	for n := range commentFiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
