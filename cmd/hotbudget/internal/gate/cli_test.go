package gate

// The command's end-to-end helpers for the engine's tests: hotbudget built
// once from ../.. and run as a user runs it.

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// result is what one run of the CLI produced.
type result struct {
	stdout, stderr, summary string
	code                    int
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
	cmdDir  = func() string { d, _ := filepath.Abs("../.."); return d }()
)

// build builds cmd/hotbudget once for the package's tests.
func build() {
	dir, err := os.MkdirTemp("", "hotbudget-gate-test-")
	if err != nil {
		binErr = err
		return
	}
	binPath = filepath.Join(dir, "hotbudget")
	cmd := exec.Command("go", "build", "-o", binPath, ".")
	cmd.Dir = cmdDir
	if out, err := cmd.CombinedOutput(); err != nil {
		binErr = &buildErr{err, string(out)}
	}
}

type buildErr struct {
	err error
	out string
}

func (e *buildErr) Error() string { return e.err.Error() + "\n" + e.out }

// envKeys are the variables the command reads that a test's getenv sets:
// the rest of the environment is the test's own, without them.
var envKeys = []string{"HOTBUDGET_SAMPLER", "HOTBUDGET_SAMPLER_CHECK", "HOTBUDGET_MAX_BYTES", "HOTBUDGET_MEMORY", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"}

// run runs the built command with args in the current directory, as the
// command's run does in its own tests, with the variables of envKeys as
// getenv gives them.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	bin := hotbudgetBinNoT()
	cmd := exec.Command(bin, args...)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "HOTBUDGET_") || strings.HasPrefix(k, "GITHUB_") {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range envKeys {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		io.WriteString(stderr, err.Error())
		return -1
	}
	return 0
}

// hotbudgetBinNoT is the command built (build); a build error panics,
// failing the test that ran it.
func hotbudgetBinNoT() string {
	binOnce.Do(build)
	if binErr != nil {
		panic("go build ./cmd/hotbudget: " + binErr.Error())
	}
	return binPath
}

// TestMain builds the command before the tests and removes it after.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// recordModule is a small module whose benchmark runs three functions;
// checksum, which runs its loop checksumRounds times, takes most of the
// time, so that a few hundred milliseconds of profile a run hold enough of
// its samples.
var recordModule = map[string]string{
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

// newGitDir is a new directory for a git repository, with functions that
// run git in it and write a file of it (test failures name what failed).
func newGitDir(t *testing.T) (dir string, gitIn func(args ...string), write func(name, content string)) {
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

// gitRepo makes a repository with three commits of recordModule: the
// module, a README (no code change), and checksum with 12 rounds instead of
// 8, which makes it 50% slower.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir, gitIn, write := newGitDir(t)
	gitIn("init", "-q")
	for name, content := range recordModule {
		write(name, content)
	}
	gitIn("add", "-A")
	gitIn("commit", "-q", "-m", "rec")
	write("README.md", "# rec\n")
	gitIn("add", "README.md")
	gitIn("commit", "-q", "-m", "readme")
	write("rec.go", strings.Replace(recordModule["rec.go"], "const checksumRounds = 8", "const checksumRounds = 12", 1))
	gitIn("commit", "-q", "-a", "-m", "slower checksum")
	return dir
}

// recordIn runs hotbudget record in dir.
func recordIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"record"}, args...), strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	t.Logf("hotbudget record %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// verdicts reads the function rows of record's text report: name ->
// verdict, from the full tables (--full) or the short report's lines of
// the functions regressed and near misses.
func verdicts(out string) map[string]string {
	funcs, _, _ := strings.Cut(out, "\nbenchmark results")
	v := map[string]string{}
	row := regexp.MustCompile(`(?m)^\s*\S+\s+\S+\s+\S+\s+\S+\s+(regressed|improved|unchanged|new|gone)\s+(\S+)$`)
	for _, m := range row.FindAllStringSubmatch(funcs, -1) {
		v[m[2]] = m[1]
	}
	short := regexp.MustCompile(`(?m)^      (regressed|near miss) (\S+) [-+]`)
	for _, m := range short.FindAllStringSubmatch(funcs, -1) {
		v[m[2]] = m[1]
	}
	return v
}

// runOK runs hotbudget in the repository root and returns its stdout.
func runOK(t *testing.T, want int, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(args, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" }); code != want {
		t.Fatalf("hotbudget %q: exit %d, want %d\n%s%s", args, code, want, stdout.String(), stderr.String())
	}
	return stdout.String()
}

const exitUsage = 2 // the command's exit status for usage and input errors
