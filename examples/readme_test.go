package examples

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/srcdeps"
)

// A README command is a line starting with "$ " inside a ```console block;
// the lines after it, up to the next command or the end of the block, are
// its output as the README shows it.
type readmeCommand struct {
	line   int // 1-based line in README.md
	cmd    string
	output []string
}

func readmeCommands(t *testing.T, path string) []readmeCommand {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		cmds    []readmeCommand
		inBlock bool
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !inBlock && strings.HasPrefix(line, "```console"):
			inBlock = true
		case inBlock && strings.HasPrefix(line, "```"):
			inBlock = false
		case inBlock && strings.HasPrefix(line, "$ "):
			cmds = append(cmds, readmeCommand{line: n, cmd: strings.TrimPrefix(line, "$ ")})
		case inBlock && len(cmds) > 0:
			c := &cmds[len(cmds)-1]
			c.output = append(c.output, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds
}

// TestREADMECommands runs every command of README.md's console blocks from
// the repository root, as a user on a fresh clone would, and checks that it
// succeeds and prints every output line the README shows ("..." lines stand
// for elided output). `hotbudget` is built from this checkout and put first
// on PATH, as `go install ./cmd/hotbudget` would. `go test` commands are not
// run here: CI runs the test suite itself.
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands; skipped with -short")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cmds := readmeCommands(t, filepath.Join(root, "README.md"))
	if len(cmds) < 5 {
		t.Fatalf("README.md has %d console commands; the quick start and each use need theirs", len(cmds))
	}

	srcdeps.Track(t, root) // the commands run a binary built from these
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "hotbudget"), "./cmd/hotbudget")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/hotbudget: %v\n%s", err, out)
	}
	work := t.TempDir() // for files commands write (they use $TMPDIR)

	for _, c := range cmds {
		if strings.HasPrefix(c.cmd, "go test") {
			continue
		}
		t.Run(fmt.Sprintf("line%d", c.line), func(t *testing.T) {
			cmd := exec.Command("bash", "-o", "pipefail", "-c", c.cmd)
			cmd.Dir = root
			cmd.Env = append(os.Environ(),
				"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
				"TMPDIR="+work,
				"GITHUB_ACTIONS=", // the README shows local output
			)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("README.md:%d: %s: %v\n%s", c.line, c.cmd, err, out)
			}
			got := strings.Split(string(out), "\n")
			for i := range got {
				got[i] = strings.TrimRight(got[i], " ")
			}
			// Shown lines must appear in order.
			j := 0
			for _, want := range c.output {
				want = strings.TrimRight(want, " ")
				if want == "..." || want == "" {
					continue
				}
				for j < len(got) && got[j] != want {
					j++
				}
				if j == len(got) {
					t.Fatalf("README.md:%d: %s: output lacks (in order) the line\n\t%q\ngot:\n%s", c.line, c.cmd, want, out)
				}
				j++
			}
		})
	}
}
