package testutil

import (
	"fmt"

	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/meta"
)

// The hostile-input suite's attacks and checks (issue 16): every name,
// label and comment in a profile is untrusted text from a pull request,
// and the reports are read by the GitHub Actions runner and rendered as
// GitHub Markdown.

// Hostile are the attacks, one name each: forged workflow commands,
// Markdown and HTML injection, terminal escapes, NUL, invalid UTF-8, line
// and paragraph separators, bidirectional overrides.
var Hostile = []string{
	"::stop-commands::T",
	"main.f\n::error title=X::pwned",
	"::add-mask::regressed",
	"main.g ##[warning]forged",
	"[link](https://evil.example/x) ![img](https://evil.example/i.png) <img src=x onerror=alert(1)>",
	"@octocat www.evil.example https://evil.example/u a@evil.example",
	"tick` ``two`` `back",
	"a\n\nb </details>\n# heading\n- item",
	"`",
	"\x1b[2J\x1b]8;;https://evil.example\x07link\x1b]8;;\x07\x1b]52;c;cHduZWQ=\x07",
	"nul\x00byte \xff\xfe invalid",
	"\u0085nel\u2028ls\u2029ps \u202egnp.exe \u009b31m",
	"| pipe | cell |",
	"\r::error::cr",
	"\u00a0::error::nbsp",
	"\\[x](y) \\`z` &#64;octocat &lt;img&gt;",
	"~~strike~~ *em* _em_ <b>bold</b>",
	"  ::warning::indented",
}

// Forged returns the lines of out that the Actions runner would take for
// a workflow command the tool did not write: a line (split as the runner
// splits, at \n and \r) that starts with "::" after white space, other
// than the tool's own ::error annotations, or that holds "##[" anywhere.
func Forged(out string) []string {
	own := regexp.MustCompile(`^::error (file=[^,:]*,)?(line=\d+,)?title=hotbudget [^:]*::`)
	var bad []string
	for _, l := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' || r == '\r' }) {
		t := strings.TrimLeftFunc(l, unicode.IsSpace)
		if strings.HasPrefix(t, "::") && !own.MatchString(t) || strings.Contains(l, "##[") {
			bad = append(bad, l)
		}
	}
	return bad
}

// RawControl returns the first raw control character, line or paragraph
// separator, bidirectional override or invalid UTF-8 in out (newlines and
// tabs allowed), with where it is.
func RawControl(out string) string {
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		bad := r == utf8.RuneError && size == 1 ||
			r < 0x20 && r != '\n' && r != '\t' || r == 0x7f ||
			r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 ||
			r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
		if bad {
			return fmt.Sprintf("%q at byte %d in %q", out[i:i+size], i, out[max(0, i-40):min(len(out), i+40)])
		}
		i += size
	}
	return ""
}

// RenderGFM renders Markdown as GitHub does (cmark-gfm with GitHub's
// extensions), raw HTML passed through so that the test sees what would
// reach GitHub's sanitizer. Without cmark-gfm the test is skipped, except
// in CI (CI=true), where .ci/run installs it and its absence fails.
func RenderGFM(t *testing.T, md string) string {
	t.Helper()
	path, err := exec.LookPath("cmark-gfm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("cmark-gfm is not installed (apt-get install cmark-gfm); .ci/run installs it")
		}
		t.Skip("cmark-gfm is not installed (apt-get install cmark-gfm): the Markdown reports are not rendered")
	}
	cmd := exec.Command(path, "--unsafe", "-e", "autolink", "-e", "table", "-e", "strikethrough", "-e", "tagfilter")
	cmd.Stdin = strings.NewReader(md)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cmark-gfm: %v", err)
	}
	return string(out)
}

var (
	tagRE     = regexp.MustCompile(`<(/?[a-zA-Z][a-zA-Z0-9]*)`)
	codeRE    = regexp.MustCompile(`(?s)<code>.*?</code>`)
	tagsRE    = regexp.MustCompile(`<[^>]*>`)
	mentionRE = regexp.MustCompile(`(^|[^A-Za-z0-9_])@[A-Za-z0-9]`)
)

// Mention returns the first GitHub @mention in rendered HTML outside code
// (what GitHub would link and notify), or "".
func Mention(html string) string {
	text := tagsRE.ReplaceAllString(codeRE.ReplaceAllString(html, "<code></code>"), " ")
	text = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#64;", "@").Replace(text)
	return mentionRE.FindString(text)
}

// Skeleton is the sequence of HTML tags in rendered Markdown: the block
// and inline structure, without the text.
func Skeleton(html string) []string {
	var out []string
	for _, m := range tagRE.FindAllStringSubmatch(html, -1) {
		out = append(out, strings.ToLower(m[1]))
	}
	return out
}

// HostileProfile is a CPU profile whose functions are names (each also
// the file name of the next one), whose samples carry names as thread
// labels, and whose comments are names (the first as a loader warning):
// function i has 100+10i samples, three times as many on the head side
// for odd i when head is set (regressed), called by "caller " and the
// next name, called by main.main.
func HostileProfile(names []string, head bool) *profile.Profile {
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10_000_000,
		DurationNanos: 10e9,
		Comments:      append(meta.AppendWarning(nil, names[0]), names[1]),
	}
	var id uint64
	fn := func(name, file string) *profile.Location {
		id++
		f := &profile.Function{ID: id, Name: name, SystemName: name, Filename: file}
		p.Function = append(p.Function, f)
		l := &profile.Location{ID: id, Line: []profile.Line{{Function: f, Line: 10}}}
		p.Location = append(p.Location, l)
		return l
	}
	root := fn("main.main", "main.go")
	for i, name := range names {
		next := names[(i+1)%len(names)]
		leaf := fn(name, next)
		caller := fn("caller "+next, name)
		n := int64(100 + 10*i)
		if head && i%2 == 1 {
			n *= 3
		}
		p.Sample = append(p.Sample, &profile.Sample{
			Location: []*profile.Location{leaf, caller, root},
			Value:    []int64{n, n * p.Period},
			Label:    map[string][]string{"thread": {names[(i+2)%len(names)]}, "pid": {"1"}},
		})
	}
	return p
}
