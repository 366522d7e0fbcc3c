package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/tables"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// The hostile-input suite (issue 16): every name, file name, label,
// thread name, comment, work unit, benchmark name and configuration value
// in a profile comes from the code of a pull request, and the reports are
// read by the GitHub Actions runner (workflow commands on stdout and
// stderr) and rendered as GitHub Markdown (PR comments, job summaries).
// The tests below build profiles that carry each attack, run every
// command and output format on them, and check what the runner and the
// renderer would see.

// hostileProfile writes testutil.HostileProfile to path, with a meta
// record whose name and work unit are hostile too.
func hostileProfile(t *testing.T, path string, names []string, head bool, unit string) {
	t.Helper()
	p := testutil.HostileProfile(names, head)
	meta.Set(p, meta.Record{Name: names[2], WorkUnit: meta.WorkUnit(unit), Runs: []meta.Run{{Work: 1000}}})
	testutil.WriteProfile(t, filepath.Dir(path), filepath.Base(path), p)
}

// benign are names of the same number and shape without any attack, to
// compare the rendered Markdown's structure with.
func benign(names []string) []string {
	out := make([]string, len(names))
	for i := range names {
		out[i] = fmt.Sprintf("example.com/app.Func%02d", i)
	}
	return out
}

// hostileBench writes `go test -bench` output whose benchmark names, pkg:
// lines and configuration values are hostile (each as far as the format
// lets a line carry it), five runs; the head side is slower for odd
// benchmarks.
func hostileBench(t *testing.T, path string, names []string, head bool) {
	t.Helper()
	var b strings.Builder
	for run := 0; run < 5; run++ {
		// A line of benchmark output is at most 64 KB.
		cut := func(s string) string { return oneLine(s[:min(len(s), 50000)]) }
		unit := strings.Join(strings.Fields(cut(names[4])), "_") + "/op"
		fmt.Fprintf(&b, "goos: linux\ngoarch: amd64\npkg: %s\ncpu: %s\n", cut(names[0]), cut(names[1]))
		for i, name := range names {
			ns := 1000 + 10*i + run
			if head && i%2 == 1 {
				ns = ns * 13 / 10
			}
			// A metric of the benchmark's own (b.ReportMetric) names its unit.
			fmt.Fprintf(&b, "Benchmark%s-2 \t 1000\t %d ns/op\t %d %s\n", strings.Join(strings.Fields(cut(name)), "_"), ns, ns/10, unit)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// oneLine is s without line breaks (what a line of benchmark output or a
// folded stack can carry).
func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}

// checkStreams asserts that a run's stdout and stderr hold no forged
// workflow command and no raw control character.
func checkStreams(t *testing.T, what string, r result) {
	t.Helper()
	for _, s := range []struct{ name, out string }{{"stdout", r.stdout}, {"stderr", r.stderr}} {
		if bad := testutil.Forged(s.out); len(bad) > 0 {
			t.Errorf("%s: %s has forged workflow commands: %q", what, s.name, bad)
		}
		if c := testutil.RawControl(s.out); c != "" {
			t.Errorf("%s: %s has a raw control character: %s", what, s.name, c)
		}
	}
}

// checkMarkdown renders md and its benign twin (the same command on
// ordinary names) and asserts that the hostile names added no element (no
// link, image, heading, HTML, emphasis, new block or table cell: the tags
// are the twin's, one for one) and no mention outside code.
func checkMarkdown(t *testing.T, what, md, twin string) {
	t.Helper()
	if md == "" {
		t.Errorf("%s: no Markdown", what)
		return
	}
	if len(md) >= 65536 {
		t.Errorf("%s: %d characters of Markdown, over GitHub's 65,536", what, len(md))
	}
	html := testutil.RenderGFM(t, md)
	got, want := testutil.Skeleton(html), testutil.Skeleton(testutil.RenderGFM(t, twin))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s: the hostile names changed the rendered structure:\n got %v\nwant %v\nMarkdown:\n%s\nHTML:\n%s", what, got, want, md, html)
	}
	if m := testutil.Mention(html); m != "" {
		t.Errorf("%s: a mention outside code (%q) in:\n%s", what, m, html)
	}
	for _, bad := range []string{"<a ", "<img", "<h1", "<h2", "<script", "<b>", "<del>"} {
		if strings.Contains(html, bad) && !strings.Contains(testutil.RenderGFM(t, twin), bad) {
			t.Errorf("%s: rendered HTML has %s:\n%s", what, bad, html)
		}
	}
}

// hostileRun is one command of the suite, with the Markdown it wrote
// (its stdout for --format markdown, else the job summary).
type hostileRun struct {
	name, markdown string
	r              result
}

// runHostileSuite writes the profiles, benchmark output and budget for
// names in dir and runs every command and format on them.
func runHostileSuite(t *testing.T, dir string, names []string) []hostileRun {
	t.Helper()
	at := func(f string) string { return filepath.Join(dir, f) }
	for i := 0; i < 3; i++ {
		hostileProfile(t, at(fmt.Sprintf("base%d.pb.gz", i)), names, false, names[3])
		hostileProfile(t, at(fmt.Sprintf("head%d.pb.gz", i)), names, true, names[3])
	}
	var folded strings.Builder
	folded.WriteString("main.main;main.run 1\n")
	for i, n := range names {
		// Folded stacks are text (no NUL) and ; separates frames.
		noNUL := func(s string) string { return strings.NewReplacer("\x00", "", ";", ",").Replace(oneLine(s)) }
		fmt.Fprintf(&folded, "%s;%s %d\n", noNUL(names[(i+1)%len(names)]), noNUL(n), 10+i)
	}
	if err := os.WriteFile(at("hostile.folded"), []byte(folded.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	hostileBench(t, at("old.txt"), names, false)
	hostileBench(t, at("new.txt"), names, true)
	budget := "version: 1\nrules:\n  - match: '.'\n    max_self_share: 1%\n  - function: " + jsonString(names[1]+"x") + "\n    max_self: 1s\n"
	if err := os.WriteFile(at("budget.yaml"), []byte(budget), 0o644); err != nil {
		t.Fatal(err)
	}
	head, base := at("head0.pb.gz"), at("base0.pb.gz")
	cases := []struct {
		name   string
		args   []string
		github bool
		md     bool // stdout is Markdown
	}{
		{"top", []string{"top", head}, false, false},
		{"top-markdown", []string{"top", "-n", "0", "--format", "markdown", head}, false, true},
		{"top-json", []string{"top", "--format", "json", head}, false, false},
		{"top-html", []string{"top", "--format", "html", "--out", at("top.html"), head}, false, false},
		{"top-folded", []string{"top", at("hostile.folded")}, false, false},
		{"top-thread", []string{"top", "--thread", "no such thread", head}, false, false},
		{"diff", []string{"diff", base, at("base1.pb.gz"), at("base2.pb.gz"), "--", head, at("head1.pb.gz"), at("head2.pb.gz")}, true, false},
		{"diff-markdown", []string{"diff", "--format", "markdown", base, at("base1.pb.gz"), "--", head, at("head1.pb.gz")}, false, true},
		{"diff-json", []string{"diff", "--format", "json", base, "--", head}, false, false},
		{"diff-one-run", []string{"diff", "--same-work", base, "--", head}, true, false},
		{"bench", []string{"bench", at("old.txt"), at("new.txt")}, true, false},
		{"bench-markdown", []string{"bench", "--format", "markdown", at("old.txt"), at("new.txt")}, false, true},
		{"check", []string{"check", "--budget", at("budget.yaml"), head}, true, false},
		{"check-markdown", []string{"check", "--format", "markdown", "--budget", at("budget.yaml"), head}, false, true},
		{"convert-speedscope", []string{"convert", "--to", "speedscope", head, "-"}, false, false},
		{"unknown-command", []string{names[0]}, false, false},
	}
	var out []hostileRun
	for _, c := range cases {
		r := runCLI(t, cliCase{name: c.name, args: c.args, github: c.github})
		if r.code == exitUsage && c.name != "top-thread" && c.name != "unknown-command" {
			t.Errorf("%s: exit 2:\n%s", c.name, r.stderr)
		}
		md := r.summary
		if c.md {
			md = r.stdout
		}
		out = append(out, hostileRun{name: c.name, markdown: md, r: r})
	}
	return out
}

// jsonString quotes s for YAML (a JSON string is a YAML string).
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestHostileNames runs every command and format on profiles, benchmark
// output and a budget whose names carry the attacks of issue 16, and on a
// twin with ordinary names: no forged workflow command or raw control
// character on stdout or stderr, JSON still valid and still holding the
// names as they are, and Markdown that renders (cmark-gfm) with exactly
// the twin's structure, no mention outside code.
func TestHostileNames(t *testing.T) {
	runs := runHostileSuite(t, t.TempDir(), testutil.Hostile)
	twins := runHostileSuite(t, t.TempDir(), benign(testutil.Hostile))
	for i, h := range runs {
		checkStreams(t, h.name, h.r)
		if strings.HasSuffix(h.name, "-json") || strings.HasPrefix(h.name, "convert") {
			if !json.Valid([]byte(h.r.stdout)) {
				t.Errorf("%s: stdout is not valid JSON:\n%s", h.name, h.r.stdout)
			}
		}
		if twins[i].r.code != h.r.code {
			t.Errorf("%s: exit %d, with ordinary names %d", h.name, h.r.code, twins[i].r.code)
		}
		if h.markdown != "" || twins[i].markdown != "" {
			checkMarkdown(t, h.name, h.markdown, twins[i].markdown)
		}
	}
	// The JSON keeps the names as they are: the escaping is the writers'.
	for _, h := range runs {
		if h.name != "top-json" {
			continue
		}
		var top tables.JSON
		if err := json.Unmarshal([]byte(h.r.stdout), &top); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, f := range top.Functions {
			seen[f.Name] = true
		}
		for _, n := range testutil.Hostile[:5] {
			if !seen[strings.ToValidUTF8(n, "\uFFFD")] {
				t.Errorf("top --format json lost the name %q", n)
			}
		}
	}
	// The attacks are shown, escaped, not dropped: a reader sees what the
	// profile holds.
	for _, h := range runs {
		if h.name == "check" && !strings.Contains(h.r.stdout, "did you mean") {
			t.Errorf("check does not suggest the names closest to a missing function:\n%s", h.r.stdout)
		}
		if h.name == "top" {
			for _, want := range []string{`main.f\n::error title=X::pwned`, `\x3a:stop-commands::T`, `main.g ##\u005bwarning]forged`, `\x1b[2J`, `nul\x00byte \xff\xfe invalid`} {
				if !strings.Contains(h.r.stdout, want) {
					t.Errorf("top does not show %q escaped:\n%s", want, h.r.stdout)
				}
			}
		}
	}
}

// TestHostileOneMegabyteName runs the commands on profiles whose hottest
// function's name is 1 MB: every Markdown report stays under GitHub's
// 65,536 characters, and the text reports show the name shortened.
func TestHostileOneMegabyteName(t *testing.T) {
	long := "main.(*T)." + strings.Repeat("a`[b](c)\n@d ", 1<<20/12) + "End"
	names := append([]string{long}, testutil.Hostile[:6]...)
	names[3] = long + "2"
	names[5] = long + "3"
	runs := runHostileSuite(t, t.TempDir(), names)
	for _, h := range runs {
		checkStreams(t, h.name, h.r)
		if len(h.markdown) >= 65536 {
			t.Errorf("%s: %d characters of Markdown, over GitHub's 65,536", h.name, len(h.markdown))
		} else if h.markdown != "" {
			t.Logf("%s: %d characters of Markdown", h.name, len(h.markdown))
		}
		if n := len(h.r.stdout) + len(h.r.stderr); n > 200_000 && !strings.HasSuffix(h.name, "-json") && !strings.HasPrefix(h.name, "convert") {
			t.Errorf("%s: %d bytes of output for a few names", h.name, n)
		}
	}
	for _, h := range runs {
		if h.name == "top" && !strings.Contains(h.r.stdout, "…") {
			t.Errorf("top does not shorten the 1 MB name:\n%.2000s", h.r.stdout)
		}
	}
}

// TestGuard checks the writer every line of the CLI passes through, on its
// own: escapes as Term does, keeps tabs, newlines and text written in
// pieces, and lets only Command write a workflow command.
func TestGuard(t *testing.T) {
	var b bytes.Buffer
	g := textfmt.NewGuard(&b)
	for _, piece := range []string{"ok\tline\n", ":", ":error::x\n  ::warning::y\nz ##", "[w]\n\x1b[2Jpartial"} {
		if _, err := g.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Command("::error title=hotbudget diff: f regressed::f regressed"); err != nil {
		t.Fatal(err)
	}
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "ok\tline\n\\x3a:error::x\n  \\x3a:warning::y\nz ##\\u005bw]\n\\x1b[2Jpartial\n::error title=hotbudget diff: f regressed::f regressed\n"
	if b.String() != want {
		t.Errorf("guarded output %q, want %q", b.String(), want)
	}
}

// hostileJS is a Node program whose hot method's name carries forged
// workflow commands, a Markdown link, a mention and a terminal escape, as
// the probe of issue 16 did (a string-literal method name is the function
// name V8 records), and whose other hot function lives in a script whose
// file name does the same (vm's filename is the profile's URL); argv[2]
// sets how much work the hot method does.
const hostileJS = `
const vm = require("vm");
const hot = "hot\n::error title=X::pwned ##[warning]w [l](https://evil.example) @octocat \x1b]52;c;cHduZWQ=\x07";
const o = {
  "hot\n::error title=X::pwned ##[warning]w [l](https://evil.example) @octocat \x1b]52;c;cHduZWQ=\x07"(n) {
    let s = 0;
    for (let i = 0; i < n; i++) s += Math.sqrt(i) * Math.sin(i);
    return s;
  },
};
const cold = vm.runInThisContext(
  "(function cold(n) { let s = 0; for (let i = 0; i < n; i++) s += Math.cos(i); return s; })",
  { filename: "file\n::add-mask::regressed ##[error]x [f](https://evil.example)" });
const n = Number(process.argv[2]);
let t = 0;
for (let r = 0; r < 40; r++) {
  t += o[hot](n);
  t += cold(300000);
}
console.log(t > 0);
`

// nodeProfile runs hostileJS under node --cpu-prof and returns the
// profile's path.
func nodeProfile(t *testing.T, dir string, n int) string {
	t.Helper()
	prog := filepath.Join(dir, "hostile.js")
	if err := os.WriteFile(prog, []byte(hostileJS), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.MkdirTemp(dir, "prof")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "--cpu-prof", "--cpu-prof-dir", out, "--cpu-prof-interval=500", prog, fmt.Sprint(n))
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node: %v\n%s", err, msg)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.cpuprofile"))
	if len(files) != 1 {
		t.Fatalf("node wrote %d profiles in %s", len(files), out)
	}
	return files[0]
}

// allowedTags are the HTML elements the Markdown reports are made of.
var allowedTags = map[string]bool{
	"h3": true, "h4": true, "p": true, "br": true, "strong": true, "code": true, "table": true, "thead": true,
	"tbody": true, "tr": true, "th": true, "td": true, "details": true, "summary": true, "ul": true, "li": true,
	"blockquote": true,
}

// checkMarkdownTags renders md and asserts it is made of the reports'
// elements only (no link, image, other heading or HTML) with no mention
// outside code.
func checkMarkdownTags(t *testing.T, what, md string) {
	t.Helper()
	html := testutil.RenderGFM(t, md)
	for _, tag := range testutil.Skeleton(html) {
		if !allowedTags[strings.TrimPrefix(tag, "/")] {
			t.Errorf("%s: rendered Markdown has <%s>:\n%s", what, tag, html)
			break
		}
	}
	if m := testutil.Mention(html); m != "" {
		t.Errorf("%s: a mention outside code (%q) in:\n%s", what, m, html)
	}
}

// TestHostileNode is the probe of issue 16 rebuilt: a JavaScript method
// named "hot\n::error title=X::pwned ..." profiled with node --cpu-prof,
// then hotbudget top and diff (head doing twice the work in it) in every
// format and under GitHub Actions. No forged workflow command, no raw
// control character, and the Markdown only the reports' own elements.
func TestHostileNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	base := nodeProfile(t, dir, 200000)
	head := nodeProfile(t, dir, 400000)
	var sawName bool
	for _, c := range []struct {
		args   []string
		github bool
		md     bool
	}{
		{[]string{"top", head}, false, false},
		{[]string{"top", "--format", "markdown", head}, false, true},
		{[]string{"top", "--format", "json", head}, false, false},
		{[]string{"diff", base, "--", head}, true, false},
		{[]string{"diff", "--format", "markdown", base, "--", head}, false, true},
	} {
		what := strings.NewReplacer(base, "BASE", head, "HEAD").Replace(strings.Join(c.args, " "))
		r := runCLI(t, cliCase{args: c.args, github: c.github})
		if r.code == exitUsage {
			t.Fatalf("%s: exit 2\n%s", what, r.stderr)
		}
		checkStreams(t, what, r)
		sawName = sawName || strings.Contains(r.stdout, `hot\n::error title=X::pwned ##\u005bwarning]w`)
		if c.md {
			checkMarkdownTags(t, what, r.stdout)
		}
		if c.github {
			checkMarkdownTags(t, what+" (job summary)", r.summary)
		}
	}
	if !sawName {
		t.Error("the hot method's name is not shown escaped in any report")
	}
}

// TestHTMLHugeNameInBrowser opens the HTML report of a profile whose
// hottest function has a 1 MB name (the issue's probe threw "Regular
// expression too large" when its name was clicked, as the click searched
// for it as a pattern) and of hostile names, clicks every name in the
// table and types the long name into the search box: each click finds
// its frames, and the page reports no error.
func TestHTMLHugeNameInBrowser(t *testing.T) {
	long := "main.(*T)." + strings.Repeat("a.b(c)[d]\n", 1<<20/10) + "End"
	names := append([]string{long}, testutil.Hostile...)
	path := filepath.Join(t.TempDir(), "huge.pb.gz")
	hostileProfile(t, path, names, true, "op")
	out := filepath.Join(t.TempDir(), "huge.html")
	r := runCLI(t, cliCase{args: []string{"top", "-n", "0", "--format", "html", "--out", out, path}})
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	p := newPage(t)
	p.open(out)
	links := eval[int](p, `document.querySelectorAll('a.hb-fn').length`)
	if links < len(names) {
		t.Fatalf("%d function links, want at least %d", links, len(names))
	}
	for i := 0; i < links; i++ {
		eval[bool](p, `(window.__hotbudget.matches = 0, true)`)
		eval[bool](p, fmt.Sprintf(`(document.querySelectorAll('a.hb-fn')[%d].click(), true)`, i))
		p.wait(fmt.Sprintf("matches of name %d (%.60q)", i, eval[string](p, fmt.Sprintf(`document.querySelectorAll('a.hb-fn')[%d].dataset.fn`, i))), `window.__hotbudget.matches > 0`)
	}
	p.noErrors()
}
