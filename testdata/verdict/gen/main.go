// Command gen records the real profiles of hotbudget's verdict benchmark
// under testdata/verdict: runs of real programs, identical (A/A) and with a
// known change (A/B), recorded on the machine it runs on. Run it from the
// repository root:
//
//	go run ./testdata/verdict/gen [-out testdata/verdict] [-sets node-lib,node-other,go-app,go-other,go-app-perf,go-other-perf]
//
// node-lib and node-other install pinned npm packages (acorn, js-yaml) into
// a temporary directory with npm and record `node --cpu-prof` profiles of the
// small drivers in gen/node; node-lib's variant B is acorn with the patch in
// patch.go applied. go-app and go-other build the programs in gen/goapp and
// gen/goother and record runtime/pprof profiles (100 Hz) that carry
// hotbudget's meta record of the work each run did; go-app-perf and
// go-other-perf record the same programs with Linux perf events
// (internal/perfexec, every thread of the process from its first
// instruction, symbolised from the binary as hotbudget record does) at
// goPerfPeriod.
//
// The runs of the variants of one data set are interleaved (A,B,B,A,A,B,...;
// A,B,C,B,C,A,C,A,B,... for three), so that a drift in the machine's speed
// hits every variant alike. Every run is logged, with the machine's load
// average when it started, in the data set's RECORDING.tsv.
package main

import (
	"bytes"
	"compress/gzip"
	"embed"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hotbudget/hotbudget/internal/binsym"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/perfexec"
	"github.com/hotbudget/hotbudget/testdata/verdict/gen/gorun"
)

//go:embed node/*.js
var nodeFiles embed.FS

// Pinned third-party packages. Their code is installed at recording time
// and never committed.
const (
	acornPkg  = "acorn@8.19.0"
	jsYAMLPkg = "js-yaml@5.5.0"
)

// Run lengths, chosen for about 2 s of CPU a run on a 2-core AMD EPYC.
const (
	acornParses  = 120
	yamlRounds   = 50
	goAppRecords = 400_000
	goOtherRound = 22
)

// goPerfPeriod is the perf sets' sampling period: 2 kHz of each thread's
// CPU time, perfassert.Capture's rate. hotbudget record's 10 kHz doubled
// the programs' CPU time on the 2-core virtual machine they were recorded
// on (the timer's interrupts cost there); 2 kHz adds about 13%
// (perfassert's BenchmarkSamplerOverhead) and still gives 50-100 times
// the samples of runtime/pprof's 100 Hz.
const goPerfPeriod = 500 * time.Microsecond

func main() {
	out := flag.String("out", "testdata/verdict", "write the data sets under `dir`")
	sets := flag.String("sets", "node-lib,node-other,go-app,go-other,go-app-perf,go-other-perf", "comma-separated data sets to record")
	runs := flag.Int("runs", 10, "runs of each variant (node-other's 100 µs runs: half as many)")
	flag.Parse()
	tmp, err := os.MkdirTemp("", "verdict-gen-")
	check(err)
	defer os.RemoveAll(tmp)
	g := &gen{out: *out, tmp: tmp, runs: *runs}
	for _, s := range strings.Split(*sets, ",") {
		switch s {
		case "node-lib":
			g.nodeLib()
		case "node-other":
			g.nodeOther()
		case "go-app":
			g.goApp(false)
		case "go-other":
			g.goOther(false)
		case "go-app-perf":
			g.goApp(true)
		case "go-other-perf":
			g.goOther(true)
		default:
			check(fmt.Errorf("unknown data set %q", s))
		}
	}
}

type gen struct {
	out, tmp string
	runs     int
	npmDone  bool
	syms     map[string]*binsym.Binary // of the perf sets' binaries
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// npm installs the pinned packages and writes the drivers into tmp/node.
func (g *gen) npm() string {
	dir := filepath.Join(g.tmp, "node")
	if g.npmDone {
		return dir
	}
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"verdict-gen","private":true}`+"\n"), 0o644))
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--save-exact", acornPkg, jsYAMLPkg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	check(cmd.Run())
	files, err := nodeFiles.ReadDir("node")
	check(err)
	for _, f := range files {
		b, err := nodeFiles.ReadFile("node/" + f.Name())
		check(err)
		check(os.WriteFile(filepath.Join(dir, f.Name()), b, 0o644))
	}
	g.npmDone = true
	return dir
}

// run is one recording to make.
type run struct {
	variant string
	name    string // file name under the data set's directory
	args    []string
	// result is where the command leaves its profile; empty for node,
	// whose profile is found in a fresh directory.
	result string
	// perf runs the Go program args[0] under perf events (perfexec): it
	// prints "ops N" and the profile is built here, as record builds one.
	perf bool
	// what names the program in the profile's meta record (perf runs).
	what string
}

// record runs the runs in order, moves their profiles into out/set, and
// writes out/set/RECORDING.tsv.
func (g *gen) record(set string, runs []run) {
	dir := filepath.Join(g.out, set)
	check(os.MkdirAll(dir, 0o755))
	var log bytes.Buffer
	fmt.Fprintf(&log, "# %s recorded by testdata/verdict/gen on %s (%d CPUs), %s\n", set, host(), runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(&log, "file\tvariant\tstarted_utc\tloadavg_1m\twall_s\tcpu_s\n")
	for i, r := range runs {
		load := loadavg()
		start := time.Now()
		profDir := filepath.Join(g.tmp, fmt.Sprintf("prof%03d", i))
		check(os.MkdirAll(profDir, 0o755))
		if r.perf {
			wall, cpu := g.perfRun(r, filepath.Join(dir, r.name))
			fmt.Fprintf(&log, "%s\t%s\t%s\t%s\t%.2f\t%.2f\n", r.name, r.variant, start.UTC().Format(time.RFC3339), load, wall.Seconds(), cpu.Seconds())
			fmt.Fprintf(os.Stderr, "%s/%s load %s wall %.1fs cpu %.1fs\n", set, r.name, load, wall.Seconds(), cpu.Seconds())
			continue
		}
		var cmd *exec.Cmd
		if r.result == "" {
			cmd = exec.Command("node", append([]string{"--cpu-prof", "--cpu-prof-dir", profDir, "--cpu-prof-name", "run.cpuprofile"}, r.args...)...)
		} else {
			cmd = exec.Command(r.args[0], r.args[1:]...)
		}
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Run(); err != nil {
			check(fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String()))
		}
		wall := time.Since(start)
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		dst := filepath.Join(dir, r.name)
		if r.result == "" {
			gzipFile(filepath.Join(profDir, "run.cpuprofile"), dst)
		} else {
			b, err := os.ReadFile(r.result)
			check(err)
			check(os.WriteFile(dst, b, 0o644))
		}
		fmt.Fprintf(&log, "%s\t%s\t%s\t%s\t%.2f\t%.2f\n", r.name, r.variant, start.UTC().Format(time.RFC3339), load, wall.Seconds(), cpu.Seconds())
		fmt.Fprintf(os.Stderr, "%s/%s load %s wall %.1fs cpu %.1fs\n", set, r.name, load, wall.Seconds(), cpu.Seconds())
	}
	check(os.WriteFile(filepath.Join(dir, "RECORDING.tsv"), log.Bytes(), 0o644))
}

// perfRun runs a Go program of a perf data set under perf events and
// writes its profile to dst with the meta record gorun writes: the
// operations the program reports, and its user CPU time (the time the
// samples see). It returns the run's wall and user CPU time.
func (g *gen) perfRun(r run, dst string) (wall, cpu time.Duration) {
	cmd := exec.Command(r.args[0], r.args[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	res, err := perfexec.Run(cmd, perfexec.Options{Period: goPerfPeriod})
	if err != nil {
		check(fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String()))
	}
	ops, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(stdout.String()), "ops "))
	if err != nil {
		check(fmt.Errorf("%s printed %q, not the operations done", strings.Join(cmd.Args, " "), stdout.String()))
	}
	if g.syms == nil {
		g.syms = map[string]*binsym.Binary{}
	}
	sym := g.syms[r.args[0]]
	if sym == nil {
		sym, err = binsym.Open(r.args[0])
		check(err)
		g.syms[r.args[0]] = sym
	}
	p, err := perfexec.Profile(res, sym)
	check(err)
	meta.Set(p, gorun.Record(r.what, "op", int(time.Second/res.Period), ops, res.UserTime.Nanoseconds()))
	var z bytes.Buffer
	check(p.Write(&z))
	check(os.WriteFile(dst, z.Bytes(), 0o644))
	if res.Lost > 0 {
		fmt.Fprintf(os.Stderr, "%s: %d samples lost\n", dst, res.Lost)
	}
	return res.Wall, res.UserTime
}

func gzipFile(src, dst string) {
	b, err := os.ReadFile(src)
	check(err)
	var z bytes.Buffer
	w, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
	check(err)
	_, err = w.Write(b)
	check(err)
	check(w.Close())
	check(os.WriteFile(dst, z.Bytes(), 0o644))
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func host() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOOS + "/" + runtime.GOARCH
}

// order returns the order of the variants in round r: two variants
// alternate A,B then B,A; three rotate.
func order(variants []string, r int) []string {
	n := len(variants)
	o := make([]string, n)
	for i := range o {
		o[i] = variants[(i+r)%n]
	}
	return o
}

func (g *gen) nodeLib() {
	dir := g.npm()
	libA := filepath.Join(dir, "node_modules", "acorn")
	libB := filepath.Join(dir, "acorn-B")
	check(copyDir(libA, libB))
	check(patchAcorn(filepath.Join(libB, "dist", "acorn.js")))
	lib := map[string]string{"A": libA, "B": libB}
	var runs []run
	for r := 0; r < g.runs; r++ {
		intervals := []int{100, 1000}
		if r%2 == 1 {
			intervals = []int{1000, 100}
		}
		for _, us := range intervals {
			for _, v := range order([]string{"A", "B"}, r+us/1000) {
				runs = append(runs, run{
					variant: v,
					name:    fmt.Sprintf("%s-%dus-%02d.cpuprofile.gz", v, us, r+1),
					args:    []string{"--cpu-prof-interval", fmt.Sprint(us), filepath.Join(dir, "acorn-driver.js"), lib[v], fmt.Sprint(acornParses)},
				})
			}
		}
	}
	g.record("node-lib", runs)
}

func (g *gen) nodeOther() {
	dir := g.npm()
	lib := filepath.Join(dir, "node_modules", "js-yaml")
	var runs []run
	for r := 0; r < g.runs; r++ {
		us := []int{1000}
		if r%2 == 0 {
			us = append(us, 100)
		}
		for _, u := range us {
			runs = append(runs, run{
				variant: "A",
				name:    fmt.Sprintf("A-%dus", u),
				args:    []string{"--cpu-prof-interval", fmt.Sprint(u), filepath.Join(dir, "yaml-driver.js"), lib, fmt.Sprint(yamlRounds)},
			})
		}
	}
	// Number each interval's runs 1, 2, ... in recording order.
	seen := map[string]int{}
	for i := range runs {
		seen[runs[i].name]++
		runs[i].name = fmt.Sprintf("%s-%02d.cpuprofile.gz", runs[i].name, seen[runs[i].name])
	}
	g.record("node-other", runs)
}

// goBuild builds one of the Go workloads into tmp.
func (g *gen) goBuild(pkg string) string {
	bin := filepath.Join(g.tmp, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	check(cmd.Run())
	return bin
}

// goApp records go-app, or go-app-perf with perf events.
func (g *gen) goApp(perf bool) {
	bin := g.goBuild("./testdata/verdict/gen/goapp")
	var runs []run
	for r := 0; r < g.runs; r++ {
		for _, v := range order([]string{"A", "B", "C"}, r) {
			res := filepath.Join(g.tmp, "goapp.pb.gz")
			out := res
			if perf {
				out, res = "-", ""
			}
			runs = append(runs, run{
				variant: v,
				name:    fmt.Sprintf("%s-%02d.pb.gz", v, r+1),
				args:    []string{bin, "-variant", v, "-records", fmt.Sprint(goAppRecords), "-o", out},
				result:  res,
				perf:    perf,
				what:    "go-app " + v,
			})
		}
	}
	if perf {
		g.record("go-app-perf", runs)
		return
	}
	g.record("go-app", runs)
}

// goOther records go-other, or go-other-perf with perf events.
func (g *gen) goOther(perf bool) {
	bin := g.goBuild("./testdata/verdict/gen/goother")
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	check(err)
	var runs []run
	for r := 0; r < g.runs; r++ {
		res := filepath.Join(g.tmp, "goother.pb.gz")
		out := res
		if perf {
			out, res = "-", ""
		}
		runs = append(runs, run{
			variant: "A",
			name:    fmt.Sprintf("A-%02d.pb.gz", r+1),
			args:    []string{bin, "-goroot", strings.TrimSpace(string(goroot)), "-rounds", fmt.Sprint(goOtherRound), "-o", out},
			result:  res,
			perf:    perf,
			what:    "go-other",
		})
	}
	if perf {
		g.record("go-other-perf", runs)
		return
	}
	g.record("go-other", runs)
}

func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
