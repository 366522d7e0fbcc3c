package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitVars point git at another repository, index or object store than the
// directory it runs in (a test run from a git hook has them set).
var gitVars = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX"}

// ClearGitEnv removes from the process's environment the variables that
// point git elsewhere, makes git read no global or system configuration
// and gives it a test identity to commit as: a TestMain calls it before
// tests that run git or a command that does (hotbudget record, history).
func ClearGitEnv() {
	for _, k := range gitVars {
		os.Unsetenv(k)
	}
	for k, v := range map[string]string{"GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "hotbudget test", "GIT_AUTHOR_EMAIL": "test@example.com",
		"GIT_COMMITTER_NAME": "hotbudget test", "GIT_COMMITTER_EMAIL": "test@example.com"} {
		os.Setenv(k, v)
	}
}

// RecordModule is a small module whose benchmark runs three functions;
// checksum, which runs its loop checksumRounds times, takes most of the
// time, so that a few hundred milliseconds of profile a run hold enough of
// its samples.
var RecordModule = map[string]string{
	"go.mod": "module example.com/rec\n\ngo 1.26\n",
	"rec.go": `// Package rec scans, checksums and renders a buffer.
package rec

// checksumRounds is how many times checksum hashes the buffer.
const checksumRounds = 8

// Process returns a digest of data.
func Process(data []byte) uint64 {
	return scan(data) + checksum(data) + render(data)
}

//go:noinline
func scan(data []byte) (h uint64) {
	for _, c := range data {
		h = h*31 + uint64(c)
	}
	return h
}

//go:noinline
func checksum(data []byte) (h uint64) {
	for range checksumRounds {
		for _, c := range data {
			h ^= uint64(c)
			h *= 1099511628211
		}
	}
	return h
}

//go:noinline
func render(data []byte) (h uint64) {
	for i, c := range data {
		h += uint64(c) * uint64(i|1)
		h ^= h >> 7
	}
	return h
}
`,
	"rec_test.go": `package rec

import "testing"

var data = make([]byte, 8<<10)

func BenchmarkProcess(b *testing.B) {
	for i := range data {
		data[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Process(data)
	}
}
`,
}

// NewGitDir is a new directory for a git repository, with functions that
// run git in it and write a file of it (test failures name what failed).
func NewGitDir(t *testing.T) (dir string, gitIn func(args ...string), write func(name, content string)) {
	dir = t.TempDir()
	gitIn = func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=hotbudget test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	write = func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, gitIn, write
}

// RecordRepo makes a repository with three commits of RecordModule: the
// module, a README (no code change), and checksum with 12 rounds instead of
// 8, which makes it 50% slower.
func RecordRepo(t *testing.T) string {
	t.Helper()
	dir, gitIn, write := NewGitDir(t)
	gitIn("init", "-q")
	for name, content := range RecordModule {
		write(name, content)
	}
	gitIn("add", "-A")
	gitIn("commit", "-q", "-m", "rec")
	write("README.md", "# rec\n")
	gitIn("add", "README.md")
	gitIn("commit", "-q", "-m", "readme")
	write("rec.go", strings.Replace(RecordModule["rec.go"], "const checksumRounds = 8", "const checksumRounds = 12", 1))
	gitIn("commit", "-q", "-a", "-m", "slower checksum")
	return dir
}
