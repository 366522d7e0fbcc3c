package perfassert_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/srcdeps"
)

// A library at the oldest Go release hotbudget supports adds one perf test
// and keeps its go directive: the TOML parser that adopted perfassert had
// to raise its own from 1.21 to 1.26. The user's module declares
// hotbudget's own go version (the lowest its dependencies allow), adds a
// test that uses perfassert, and `go mod tidy` (offline, from the module
// cache `go mod download` fills) must leave the directive as it was and
// add only the modules perfassert's packages need, none of hotbudget's
// test-only ones (chromedp).
func TestUserModuleKeepsGoDirective(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go mod tidy and builds a user's module; skipped with -short")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	srcdeps.Track(t, root)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if goLine == nil {
		t.Fatal("hotbudget's go.mod has no go directive")
	}
	minGo := string(goLine[1])
	// The stated minimum: Go 1.25, the older of the two supported
	// releases when Go 1.26 is current.
	if minGo != "1.25.0" {
		t.Errorf("hotbudget's go directive is %s, the README and this test state 1.25.0", minGo)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	userMod := fmt.Sprintf("module example.com/toml\n\ngo %s\n\nrequire github.com/hotbudget/hotbudget v0.0.0-00010101000000-000000000000\n\nreplace github.com/hotbudget/hotbudget => %s\n", minGo, root)
	files := map[string]string{
		"go.mod": userMod,
		"go.sum": string(sum),
		"toml.go": `// Package toml stands for a library.
package toml

// Parse counts the lines of s.
func Parse(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			n++
		}
	}
	return n
}
`,
		"toml_test.go": `package toml

import (
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/perfassert"
)

func TestParseHotPath(t *testing.T) {
	in := strings.Repeat("a = 1\n", 1000)
	p := perfassert.Capture(t, func() { Parse(in) })
	perfassert.MaxTotalShare(t, p, "example.com/toml.Parse", 1)
}
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GONOSUMDB=*", "GOWORK=off", "GOTOOLCHAIN=local")
	for _, args := range [][]string{{"mod", "tidy"}, {"vet", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the user's module: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	after, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(after); m == nil || string(m[1]) != minGo {
		t.Errorf("go mod tidy changed the user's go directive from %s:\n%s", minGo, after)
	}
	if regexp.MustCompile(`(?m)^toolchain `).Match(after) {
		t.Errorf("go mod tidy added a toolchain line:\n%s", after)
	}
	var gained []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(\S+) v\S+ // indirect$`).FindAllSubmatch(after, -1) {
		gained = append(gained, string(m[1]))
	}
	sort.Strings(gained)
	// What perfassert's packages import, and nothing else: the profile
	// format, perf events, statistics (gonum; x/perf's benchmath and the
	// go-moremath it uses), and x/exp for loaders' reader of Go execution
	// traces (perfassert loads baselines with loaders). No test-only
	// module of hotbudget's (chromedp, testify).
	want := []string{
		"github.com/aclements/go-moremath",
		"github.com/google/pprof",
		"golang.org/x/exp",
		"golang.org/x/perf",
		"golang.org/x/sys",
		"gonum.org/v1/gonum",
	}
	if strings.Join(gained, " ") != strings.Join(want, " ") {
		t.Errorf("the user's go.mod gained %v, want %v:\n%s", gained, want, after)
	}
}
