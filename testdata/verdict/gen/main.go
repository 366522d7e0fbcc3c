// Command gen records the real profiles of hotbudget's verdict benchmark
// under testdata/verdict: runs of real programs, identical (A/A) and with a
// known change (A/B), recorded on the machine it runs on. Run it from the
// repository root:
//
//	go run ./testdata/verdict/gen [-out testdata/verdict] [-sets node-lib,node-other,go-app,go-other]
//
// node-lib and node-other install pinned npm packages (acorn, js-yaml) into
// a temporary directory with npm and record `node --cpu-prof` profiles of the
// small drivers in gen/node; node-lib's variant B is acorn with the patch in
// patch.go applied. go-app and go-other build the programs in gen/goapp and
// gen/goother and record runtime/pprof profiles (100 Hz) that carry
// hotbudget's meta record of the work each run did.
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
	"strings"
	"time"
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

func main() {
	out := flag.String("out", "testdata/verdict", "write the data sets under `dir`")
	sets := flag.String("sets", "node-lib,node-other,go-app,go-other", "comma-separated data sets to record")
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
			g.goApp()
		case "go-other":
			g.goOther()
		default:
			check(fmt.Errorf("unknown data set %q", s))
		}
	}
}

type gen struct {
	out, tmp string
	runs     int
	npmDone  bool
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

func (g *gen) goApp() {
	bin := g.goBuild("./testdata/verdict/gen/goapp")
	var runs []run
	for r := 0; r < g.runs; r++ {
		for _, v := range order([]string{"A", "B", "C"}, r) {
			res := filepath.Join(g.tmp, "goapp.pb.gz")
			runs = append(runs, run{
				variant: v,
				name:    fmt.Sprintf("%s-%02d.pb.gz", v, r+1),
				args:    []string{bin, "-variant", v, "-records", fmt.Sprint(goAppRecords), "-o", res},
				result:  res,
			})
		}
	}
	g.record("go-app", runs)
}

func (g *gen) goOther() {
	bin := g.goBuild("./testdata/verdict/gen/goother")
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	check(err)
	var runs []run
	for r := 0; r < g.runs; r++ {
		res := filepath.Join(g.tmp, "goother.pb.gz")
		runs = append(runs, run{
			variant: "A",
			name:    fmt.Sprintf("A-%02d.pb.gz", r+1),
			args:    []string{bin, "-goroot", strings.TrimSpace(string(goroot)), "-rounds", fmt.Sprint(goOtherRound), "-o", res},
			result:  res,
		})
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
