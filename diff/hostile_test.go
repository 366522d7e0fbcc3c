package diff_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// hostileReport compares three runs a side of testutil.HostileProfile
// with names, half of the functions three times slower on the head side.
func hostileReport(t *testing.T, names []string, opts ...diff.Option) *diff.Report {
	t.Helper()
	var base, head []*profile.Profile
	for range 3 {
		base = append(base, testutil.HostileProfile(names, false))
		head = append(head, testutil.HostileProfile(names, true))
	}
	rep, err := diff.Compare(base, head, append([]diff.Option{diff.WithSameWork()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Regressions()) == 0 {
		t.Fatal("nothing regressed: the reports would not name the hostile functions in their headline")
	}
	return rep
}

// TestHostileNamesInReports writes the reports of a comparison whose
// function names, file names, labels and comments carry the attacks of
// issue 16, as a library user would (no command line, no guard on the
// output): the text report has no line the Actions runner would take for
// a workflow command and no raw control character, the JSON is valid and
// holds the names as they are, and the Markdown renders (cmark-gfm) with
// exactly the structure of the same report on ordinary names, no mention
// outside code, under GitHub's 65,536 characters.
func TestHostileNamesInReports(t *testing.T) {
	rep := hostileReport(t, testutil.Hostile)
	benign := make([]string, len(testutil.Hostile))
	for i := range benign {
		benign[i] = fmt.Sprintf("example.com/app.Func%02d", i)
	}
	twin := hostileReport(t, benign)

	var text bytes.Buffer
	if err := rep.Write(&text, "text"); err != nil {
		t.Fatal(err)
	}
	if bad := testutil.Forged(text.String()); len(bad) > 0 {
		t.Errorf("Write text: forged workflow commands %q", bad)
	}
	if c := testutil.RawControl(text.String()); c != "" {
		t.Errorf("Write text: raw control character %s", c)
	}
	if !strings.Contains(text.String(), `main.f\n::error title=X::pwned`) {
		t.Errorf("Write text does not show the name escaped:\n%s", text.String())
	}

	var js bytes.Buffer
	if err := rep.Write(&js, "json"); err != nil {
		t.Fatal(err)
	}
	var out struct{ Functions []struct{ Name string } }
	if err := json.Unmarshal(js.Bytes(), &out); err != nil {
		t.Fatalf("Write json: %v", err)
	}
	found := false
	for _, f := range out.Functions {
		found = found || f.Name == testutil.Hostile[1]
	}
	if !found {
		t.Errorf("WriteJSON lost the name %q", testutil.Hostile[1])
	}

	md := func(r *diff.Report) string {
		var b bytes.Buffer
		if err := r.Write(&b, "markdown"); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	got, want := md(rep), md(twin)
	if bad := testutil.Forged(got); len(bad) > 0 {
		t.Errorf("Write markdown: forged workflow commands %q", bad)
	}
	if c := testutil.RawControl(got); c != "" {
		t.Errorf("Write markdown: raw control character %s", c)
	}
	html, twinHTML := testutil.RenderGFM(t, got), testutil.RenderGFM(t, want)
	if g, w := strings.Join(testutil.Skeleton(html), " "), strings.Join(testutil.Skeleton(twinHTML), " "); g != w {
		t.Errorf("Write markdown: the hostile names changed the rendered structure:\n got %s\nwant %s\n%s", g, w, html)
	}
	if m := testutil.Mention(html); m != "" {
		t.Errorf("Write markdown: a mention outside code (%q):\n%s", m, html)
	}
}

// TestHostileMarkdownLimit compares profiles with 300 functions, 150 of
// them regressed, whose names are 10 KB long: the Markdown report stays
// under GitHub's 65,536 characters and says what it left out; each name in
// the text report is shortened. (The command line tests take a 1 MB name.)
func TestHostileMarkdownLimit(t *testing.T) {
	long := strings.Repeat("x", 10<<10)
	names := make([]string, 300)
	for i := range names {
		names[i] = fmt.Sprintf("f%03d.%s", i, long)
	}
	rep := hostileReport(t, names, diff.WithMode(diff.Absolute))
	var md, text bytes.Buffer
	if err := rep.Write(&md, "markdown"); err != nil {
		t.Fatal(err)
	}
	if err := rep.Write(&text, "text"); err != nil {
		t.Fatal(err)
	}
	t.Logf("Markdown %d bytes, text %d bytes, for %d functions of 10 KB names", md.Len(), text.Len(), len(names))
	if md.Len() >= 65536 {
		t.Errorf("Markdown report of %d bytes", md.Len())
	}
	if !strings.Contains(md.String(), "left out") {
		t.Errorf("the Markdown report does not say what it left out:\n%s", md.String()[md.Len()-500:])
	}
	if strings.Count(md.String(), "<details>") != strings.Count(md.String(), "</details>") {
		t.Error("the cut Markdown report leaves a <details> open")
	}
	html := testutil.RenderGFM(t, md.String())
	if strings.Contains(html, "<a ") || strings.Contains(html, "<img") {
		t.Errorf("rendered Markdown has a link or image")
	}
	for _, l := range strings.Split(text.String(), "\n") {
		if len(l) > 3000 { // a name (MaxName) and a line of prose (MaxLine)
			t.Fatalf("a line of %d bytes in the text report: names not shortened\n%.300s", len(l), l)
		}
	}
}
