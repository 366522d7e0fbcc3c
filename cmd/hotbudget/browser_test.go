package main

// Browser tests of the HTML reports: the CLI writes a report, headless
// Chromium opens it from a file:// URL, and the tests read the state the
// page's script exposes (window.__hotbudget), the DOM and the canvas'
// pixels, click and type as a user would, and take screenshots: in the
// test's temporary directory, or, with `go test ./cmd/hotbudget -update`,
// under testdata/html for review and the README. Without Chromium they
// skip.

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
	"github.com/hotbudget/hotbudget/internal/synth"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// chromium finds a Chromium or Chrome binary: $HOTBUDGET_CHROME, else the
// usual names on PATH.
func chromium() string {
	if p := os.Getenv("HOTBUDGET_CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// page is one browser tab and what its console said.
type page struct {
	t   *testing.T
	ctx context.Context
	mu  sync.Mutex
	log []chromedp.ConsoleMessage
}

// newPage starts headless Chromium with a fresh profile and no network
// activity of its own, and opens a tab 1280 CSS pixels wide.
func newPage(t *testing.T) *page {
	t.Helper()
	exe := chromium()
	if exe == "" {
		t.Skip("no Chromium found: the HTML report's browser tests need one (Debian: apt-get install chromium; or set HOTBUDGET_CHROME to a Chrome binary)")
	}
	tctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	actx, cancelA := chromedp.NewExecAllocator(tctx,
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-device-scale-factor", "1"),
		chromedp.Flag("font-render-hinting", "none"),
		chromedp.WindowSize(1280, 900),
	)
	t.Cleanup(cancelA)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(cancelC)
	p := &page{t: t, ctx: ctx}
	// Start the browser and a renderer on a blank file:// page, so that
	// the time a report takes to open is the report's.
	blank := filepath.Join(t.TempDir(), "blank.html")
	if err := os.WriteFile(blank, []byte("<!DOCTYPE html><title>blank</title>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+blank)); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.log = append(p.log, m)
			p.mu.Unlock()
		}
	}()
	return p
}

// open loads a report and waits for its script to be ready. It returns
// when the page was ready, in milliseconds after navigation started, as
// the page measured it, and the wall time the test waited.
func (p *page) open(path string) (readyMs float64, wall time.Duration) {
	p.t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		p.t.Fatal(err)
	}
	start := time.Now()
	if err := chromedp.Do(p.ctx, chromedp.Navigate("file://"+abs)); err != nil {
		p.t.Fatalf("opening %s: %v", path, err)
	}
	// The poll may start in the blank page's context as it goes away:
	// then it is retried in the report's.
	for try := 0; ; try++ {
		_, err := chromedp.Run(p.ctx, chromedp.Poll[bool]("window.__hotbudget && window.__hotbudget.ready", chromedp.WithPollingTimeout(time.Minute)))
		if err == nil {
			break
		}
		if try < 3 && strings.Contains(err.Error(), "Cannot find context") {
			continue
		}
		p.t.Fatalf("%s: the page never became ready: %v", path, err)
	}
	wall = time.Since(start)
	return eval[float64](p, "window.__hotbudget.readyMs"), wall
}

func eval[T any](p *page, js string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

func (p *page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// typeInto focuses the element matching sel and types text, as a user
// would ("\r" is Enter).
func (p *page) typeInto(sel, text string) {
	p.t.Helper()
	p.do("focus "+sel, chromedp.Evaluate[chromedp.Void](fmt.Sprintf("document.querySelector(%q).focus()", sel)))
	p.do("type into "+sel, chromedp.KeyEvent(text))
}

// click clicks the middle of the element matching sel with the mouse.
func (p *page) click(sel string) {
	p.t.Helper()
	r := eval[*rect](p, fmt.Sprintf("(() => { const e = document.querySelector(%q); if (!e) return null; e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect(); return {X: r.left, Y: r.top, W: r.width, H: r.height}; })()", sel))
	if r == nil {
		p.t.Fatalf("no element %s", sel)
	}
	p.do("click "+sel, chromedp.MouseClickXY(r.X+r.W/2, r.Y+r.H/2))
}

// wait polls a JavaScript predicate.
func (p *page) wait(what, js string) {
	p.t.Helper()
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		p.t.Fatalf("waiting for %s (%s): %v", what, js, err)
	}
}

// noErrors fails the test on any console error, uncaught exception or
// error the page's script caught.
func (p *page) noErrors() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.log {
		if strings.HasPrefix(m.Text, "Canvas2D: Multiple readback operations") {
			continue // the test's own reads of pixels
		}
		if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException || m.Type == chromedp.ConsoleWarning {
			p.t.Errorf("console %s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line)
		}
	}
	if errs := eval[[]string](p, "window.__hotbudget.errors"); len(errs) > 0 {
		p.t.Errorf("script errors: %q", errs)
	}
}

// state is what window.__hotbudget says.
type state struct {
	Nodes        int      `json:"nodes"`
	Pruned       int      `json:"pruned"`
	Drawn        int      `json:"drawn"`
	Aggregated   int      `json:"aggregated"`
	Marked       []string `json:"marked"`
	Zoomed       string   `json:"zoomed"`
	Matches      int      `json:"matches"`
	MatchShare   float64  `json:"matchShare"`
	CanvasHeight float64  `json:"canvasHeight"`
}

func (p *page) state() state {
	p.t.Helper()
	return eval[state](p, `(() => { const h = window.__hotbudget; return {nodes: h.nodes, pruned: h.pruned || 0, drawn: h.drawn || 0,
		aggregated: h.aggregated || 0, marked: h.marked || [], zoomed: h.zoomed || "", matches: h.matches || 0,
		matchShare: h.matchShare || 0, canvasHeight: h.canvasHeight || 0}; })()`)
}

// rect is a frame's place on the page, in CSS pixels.
type rect struct{ X, Y, W, H float64 }

func (p *page) frame(name string) rect {
	p.t.Helper()
	r := eval[*rect](p, fmt.Sprintf("(() => { const r = window.__hotbudget.frameRect(%q); return r && {X: r.x, Y: r.y, W: r.w, H: r.h}; })()", name))
	if r == nil {
		p.t.Fatalf("frame %s is not drawn", name)
	}
	return *r
}

// pixel reads the canvas' colour at a page position.
func (p *page) pixel(x, y float64) [3]int {
	p.t.Helper()
	return eval[[3]int](p, fmt.Sprintf(`(() => { const c = document.getElementById('hb-canvas'); const r = c.getBoundingClientRect();
		const k = c.width / r.width; const d = c.getContext('2d').getImageData(Math.floor((%g - r.left) * k), Math.floor((%g - r.top) * k), 1, 1).data;
		return [d[0], d[1], d[2]]; })()`, x, y))
}

// screenshot saves a PNG of the whole page. path is the tracked file under
// testdata/html, rewritten (atomically) only with -update; otherwise the
// screenshot goes to the test's temporary directory, so that a test run
// leaves the working tree as it was.
func (p *page) screenshot(path string) {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) <= 8 {
		p.t.Fatalf("screenshot for %s: %d bytes that are not a PNG", path, len(png))
	}
	if !*update {
		path = filepath.Join(p.t.TempDir(), filepath.Base(path))
	} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := atomicfile.Write(path, func(f *os.File) error { _, err := f.Write(png); return err }); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s", path)
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

// TestHTMLRegressInBrowser: on the real regression fixture (five runs a
// side, main.renderReport doing 20% more work), the page shows
// main.renderReport judged regressed in the table, red and marked in the
// flame graph, with the explanation naming its caller path; zoom and
// search work. With -update it saves testdata/html/regress.png, the
// README's screenshot, and regress-hover.png with the tooltip of
// main.renderReport.
func TestHTMLRegressInBrowser(t *testing.T) {
	inRepoRoot(t)
	out := filepath.Join(t.TempDir(), "regress.html")
	text := runOK(t, exitFail, "diff", "--format", "html", "--out", out, "testdata/regress/base-*.pb.gz", "--", "testdata/regress/head-*.pb.gz")
	const path = "runtime.main → main.main → main.run → main.renderReport"
	if !regexp.MustCompile(`main.renderReport: all of the \+2\d\.\d% comes through ` + regexp.QuoteMeta(path)).MatchString(text) {
		t.Errorf("the text report on stdout lacks the explanation:\n%s", text)
	}
	p := newPage(t)
	ms, wall := p.open(out)
	t.Logf("ready %.0f ms after navigation (%v waited)", ms, wall)

	// The table: main.renderReport regressed, explained through its path.
	row := eval[[]string](p, `Array.from(document.querySelectorAll('tr.hb-row.hb-v-regressed td')).map(td => td.textContent.trim())`)
	if len(row) != 6 || row[0] != "main.renderReport" || row[5] != "regressed" {
		t.Errorf("regressed rows of the table: %q, want main.renderReport alone", row)
	}
	summary := eval[string](p, `document.querySelector('tr.hb-explain summary').textContent`)
	if !strings.Contains(summary, path) {
		t.Errorf("explanation %q does not name the caller path %s", summary, path)
	}
	headline := eval[string](p, `document.getElementById('hb-headline').textContent`)
	if headline != "1 of 3 functions judged regressed: main.renderReport" {
		t.Errorf("headline %q", headline)
	}

	// The flame graph: renderReport drawn, marked regressed, and red.
	st := p.state()
	if st.Nodes < 10 || st.Drawn < 5 {
		t.Errorf("flame graph: %d nodes, %d drawn", st.Nodes, st.Drawn)
	}
	if fmt.Sprint(st.Marked) != "[main.renderReport]" {
		t.Errorf("marked frames %q, want main.renderReport", st.Marked)
	}
	rr := p.frame("main.renderReport")
	canvasW := eval[float64](p, `document.getElementById('hb-canvas').getBoundingClientRect().width`)
	// renderReport holds 61% of head's samples: its frame is that wide.
	if share := rr.W / canvasW; math.Abs(share-0.61) > 0.02 {
		t.Errorf("main.renderReport frame is %.3f of the width, want about 0.61 (its total share in head)", share)
	}
	if c := p.pixel(rr.X+rr.W-8, rr.Y+rr.H/2); !(c[0] > c[2]+60 && c[0] > c[1]+60) {
		t.Errorf("main.renderReport's frame has colour %v, want red (slower)", c)
	}
	pr := p.frame("main.parseRecords")
	if c := p.pixel(pr.X+pr.W-8, pr.Y+pr.H/2); c[0]-c[2] > 40 || c[2]-c[0] > 40 {
		t.Errorf("main.parseRecords (unchanged) has colour %v, want nearly grey", c)
	}

	p.screenshot("testdata/html/regress.png")

	// Hover: the tooltip shows the frame's numbers.
	p.do("hover", chromedp.MouseEvent(chromedp.MouseMoved, rr.X+rr.W/3, rr.Y+rr.H/2))
	p.wait("the tooltip", `!document.getElementById('hb-tip').hidden`)
	tip := eval[string](p, `document.getElementById('hb-tip').textContent`)
	for _, want := range []string{"main.renderReport", "self", "total", "+2", "p=", "regressed"} {
		if !strings.Contains(tip, want) {
			t.Errorf("tooltip %q lacks %q", tip, want)
		}
	}
	p.screenshot("testdata/html/regress-hover.png")

	// Click zooms: parseRecords fills the width.
	p.do("click", chromedp.MouseClickXY(pr.X+pr.W/2, pr.Y+pr.H/2))
	p.wait("zoom", `window.__hotbudget.zoomed === "main.parseRecords"`)
	if z := p.frame("main.parseRecords"); z.W < canvasW-3 {
		t.Errorf("zoomed frame is %.0f px wide, want the canvas' %.0f", z.W, canvasW)
	}
	if crumbs := eval[string](p, `document.getElementById('hb-crumbs').textContent`); !strings.Contains(crumbs, "main.run › main.parseRecords") {
		t.Errorf("breadcrumbs %q", crumbs)
	}
	p.click("#hb-reset")
	p.wait("zoom out", `window.__hotbudget.zoomed === "all"`)

	// Search highlights matching frames.
	p.typeInto("#hb-search", "writeLog|parseRec\r")
	p.wait("matches", `window.__hotbudget.matches === 2`)
	st = p.state()
	if math.Abs(st.MatchShare-(0.2516+0.1252)) > 0.02 {
		t.Errorf("matched %.3f of head, want about 0.377 (parseRecords' and writeLog's shares)", st.MatchShare)
	}
	if c := p.pixel(pr.X+pr.W-8, pr.Y+pr.H/2); c != [3]int{230, 0, 230} {
		t.Errorf("matched frame colour %v, want the highlight", c)
	}
	// A click on a function name in the table searches for it.
	p.click(`a.hb-fn[data-fn="main.renderReport"]`)
	p.wait("search from the table", `document.getElementById('hb-search').value === "^main\\.renderReport$" && window.__hotbudget.matches === 1`)
	p.noErrors()
}

// TestHTMLExplainInBrowser: parse is called through load and through
// handler → render, and only the calls through render take longer. The
// flame graph shows that call path red and the one through load not, both
// frames marked as the regressed function's; the explanation says so.
// With -update it saves testdata/html/explain.png.
func TestHTMLExplainInBrowser(t *testing.T) {
	inRepoRoot(t)
	out := filepath.Join(t.TempDir(), "explain.html")
	runOK(t, exitFail, "diff", "--format", "html", "--out", out, "testdata/cli/explain-base.folded", "--", "testdata/cli/explain-head.folded")
	p := newPage(t)
	p.open(out)
	summary := eval[string](p, `document.querySelector('tr.hb-explain summary').textContent`)
	if want := "+25.0% of the +25.0% comes through main → handler → render → parse; the path main → load → parse is unchanged"; summary != want {
		t.Errorf("explanation %q, want %q", summary, want)
	}
	if st := p.state(); fmt.Sprint(st.Marked) != "[parse]" {
		t.Errorf("marked %q, want parse", st.Marked)
	}
	slow, same := p.frame("main;handler;render;parse"), p.frame("main;load;parse")
	if c := p.pixel(slow.X+slow.W-8, slow.Y+slow.H/2); !(c[0] > c[2]+80 && c[0] > c[1]+80) {
		t.Errorf("parse under render has colour %v, want red", c)
	}
	if c := p.pixel(same.X+same.W-8, same.Y+same.H/2); c[0]-c[2] > 30 || c[2]-c[0] > 30 {
		t.Errorf("parse under load has colour %v, want grey", c)
	}
	// Each side's width: head by default, base on request.
	canvasW := eval[float64](p, `document.getElementById('hb-canvas').getBoundingClientRect().width`)
	if share := slow.W / canvasW; math.Abs(share-450.0/1150) > 0.01 {
		t.Errorf("parse under render is %.3f of the width, want 450/1150 of head", share)
	}
	p.click(`input[name="hb-width"][value="base"]`)
	p.wait("base widths", `window.__hotbudget.widthBy() === "base"`)
	if share := p.frame("main;handler;render;parse").W / canvasW; math.Abs(share-0.3) > 0.01 {
		t.Errorf("with base widths parse under render is %.3f of the width, want 300/1000", share)
	}
	p.click(`input[name="hb-width"][value="head"]`)
	p.wait("head widths", `window.__hotbudget.widthBy() === "head"`)
	p.screenshot("testdata/html/explain.png")
	p.noErrors()
}

// TestHTMLTopInBrowser: the single-profile page of hotbudget top. With
// -update it saves testdata/html/top.png.
func TestHTMLTopInBrowser(t *testing.T) {
	inRepoRoot(t)
	out := filepath.Join(t.TempDir(), "top.html")
	runOK(t, exitOK, "top", "--format", "html", "--out", out, "testdata/pprof/busy.pb.gz")
	p := newPage(t)
	p.open(out)
	st := p.state()
	if st.Nodes < 5 || st.Drawn < 3 || len(st.Marked) != 0 {
		t.Errorf("state %+v", st)
	}
	rows := eval[int](p, `document.querySelectorAll('tr.hb-row').length`)
	if rows == 0 {
		t.Error("no table rows")
	}
	main := p.frame("main.main")
	p.do("click", chromedp.MouseClickXY(main.X+main.W/2, main.Y+main.H/2))
	p.wait("zoom", `window.__hotbudget.zoomed === "main.main"`)
	p.typeInto("#hb-search", "^main\\.\r")
	p.wait("matches", `window.__hotbudget.matches > 0`)
	p.screenshot("testdata/html/top.png")
	p.noErrors()
}

// TestHTMLLargeInBrowser opens the report of a comparison of 50,000
// functions and 200,000 stacks of 8 to 24 frames (synthetic, seeded) and
// logs how long the page took to become interactive; zoom and search must
// work on it. The time is logged, not asserted: the machine may be busy.
// Under the race detector, where comparing 50,000 functions takes
// minutes, the comparison is a tenth of the size.
func TestHTMLLargeInBrowser(t *testing.T) {
	testutil.Slow(t, "builds a 50,000-function comparison and opens it in Chromium")
	dir := t.TempDir()
	spec := synth.PairSpec{Seed: 1, Functions: 50000, Stacks: 200000, MinDepth: 8, MaxDepth: 24, Slower: 4242, Factor: 1.5}
	if raceEnabled {
		spec.Functions, spec.Stacks = 5000, 20000
		t.Logf("race detector: %d functions and %d stacks (go test without -race measures 50,000)", spec.Functions, spec.Stacks)
	}
	base, head, err := synth.Profiles(spec)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, prof *profile.Profile) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := prof.Write(f); err != nil {
			t.Fatal(err)
		}
		return path
	}
	bp, hp := write("base.pb.gz", base), write("head.pb.gz", head)
	out := filepath.Join(dir, "large.html")
	start := time.Now()
	runOK(t, exitFail, "diff", "--format", "html", "--out", out, bp, "--", hp)
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hotbudget diff --format html: %v, %.1f MB", time.Since(start).Round(time.Millisecond), float64(fi.Size())/1e6)

	p := newPage(t)
	// Opened three times: the machine may be busy, and the fastest is the
	// page's own cost.
	var times []string
	best := math.Inf(1)
	for range 3 {
		ms, wall := p.open(out)
		times = append(times, fmt.Sprintf("%.0f ms (%v waited; %v)", ms, wall.Round(time.Millisecond),
			eval[map[string]float64](p, "window.__hotbudget.timings")))
		best = math.Min(best, ms)
	}
	st := p.state()
	t.Logf("%d functions: interactive after %.0f ms at best; opened %s; %d frames in the page (%d left out), %d drawn, %d blocks of narrow frames",
		spec.Functions, best, strings.Join(times, ", "), st.Nodes, st.Pruned, st.Drawn, st.Aggregated)
	if st.Nodes < spec.Functions/5 || st.Aggregated == 0 {
		t.Errorf("state %+v: want a large tree with narrow frames summed", st)
	}
	slow := synth.Name(spec.Slower)
	if !strings.Contains(strings.Join(st.Marked, " "), slow) && eval[int](p, `document.querySelectorAll('tr.hb-row.hb-v-regressed').length`) == 0 {
		t.Errorf("%s (50%% slower) is neither marked in the graph nor regressed in the table", slow)
	}
	// Zoom into an entry point, then search.
	entry := synth.Name(0)
	r := p.frame(entry)
	t0 := time.Now()
	p.do("click", chromedp.MouseClickXY(r.X+r.W/2, r.Y+r.H/2))
	p.wait("zoom", fmt.Sprintf(`window.__hotbudget.zoomed === %q`, entry))
	t.Logf("zoom: %v", time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	p.typeInto("#hb-search", "pkg07\\.\r")
	p.wait("matches", `window.__hotbudget.matches > 100`)
	t.Logf("search: %v, %d frames", time.Since(t0).Round(time.Millisecond), p.state().Matches)
	p.noErrors()
}
