package callgrind

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// goDir holds real dumps of Go programs, whole (no --toggle-collect): the
// runtime's start, stack growth, goroutine switches (see
// testdata/README.md).
const goDir = "testdata"

var goDumps = []string{"gowork", "gowork-instr", "gotest-instr"}

// spending returns, by "file:function", what each function spends per
// event, its self cost and the inclusive cost of its calls to others (the
// code it inlined from other files included, as the builder's graph has
// it); whether it is on a call cycle; and whether it calls, directly or
// not, a function whose callers' calls carry other than what it spends
// (where callgrind lost track: stack switches, the exit, code keyed by
// another file), so that what it spends cannot all be on its stacks.
func spending(t *testing.T, data []byte) (spent map[string][]int64, onCycle, reachesOdd map[string]bool) {
	t.Helper()
	ps := &parser{nodeOf: make(map[[2]string]int32), intern: make(map[string]string), groupOf: make(map[string]*group),
		cur: -1, main: -1, callee: -1, npos: 1, warn: func(string, ...any) {}, own: newOwnMeter()}
	for i := range ps.names {
		ps.names[i] = make(map[int64]string)
	}
	if err := ps.read(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	spent, onCycle, reachesOdd = make(map[string][]int64), make(map[string]bool), make(map[string]bool)
	b := &builder{ps: ps, local: newLocal(len(ps.nodes))}
	for _, g := range ps.groups {
		gr, err := b.graphOf(g)
		if err != nil {
			t.Fatal(err)
		}
		comp, order := sccs(gr)
		for v := range gr.n {
			nd := ps.nodes[gr.glob[v]]
			k := nd.file + ":" + nd.fn
			if spent[k] == nil {
				spent[k] = make([]int64, gr.nev)
			}
			for e := range gr.nev {
				spent[k][e] += gr.self[v*gr.nev+e]
				for _, a := range gr.out[v] {
					if gr.to[a] != int32(v) {
						spent[k][e] += gr.cost[int(a)*gr.nev+e]
					}
				}
			}
			if len(order[comp[v]]) > 1 {
				onCycle[k] = true
			}
			for _, a := range gr.out[v] {
				if gr.to[a] == int32(v) {
					onCycle[k] = true
				}
			}
		}
		// The callers of odd functions, and theirs, up the graph.
		in := make([]int64, gr.n*gr.nev)
		own := make([]int64, gr.n*gr.nev)
		callers := make([][]int32, gr.n)
		for v := range gr.n {
			for e := range gr.nev {
				own[v*gr.nev+e] += gr.self[v*gr.nev+e]
			}
			for _, a := range gr.out[v] {
				if to := int(gr.to[a]); to != v {
					callers[to] = append(callers[to], int32(v))
					for e := range gr.nev {
						in[to*gr.nev+e] += gr.cost[int(a)*gr.nev+e]
						own[v*gr.nev+e] += gr.cost[int(a)*gr.nev+e]
					}
				}
			}
		}
		tainted := make([]bool, gr.n)
		var queue []int32
		for v := range gr.n {
			odd := false
			for e := range gr.nev {
				odd = odd || len(callers[v]) > 0 && in[v*gr.nev+e] != own[v*gr.nev+e]
			}
			if odd {
				queue = append(queue, callers[v]...)
			}
		}
		for len(queue) > 0 {
			v := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			if !tainted[v] {
				tainted[v] = true
				queue = append(queue, callers[v]...)
			}
		}
		for v := range gr.n {
			if tainted[v] {
				nd := ps.nodes[gr.glob[v]]
				reachesOdd[nd.file+":"+nd.fn] = true
			}
		}
	}
	return spent, onCycle, reachesOdd
}

// checkTotals holds the profile of a real Go dump to what the file says:
// every function's self cost equal to callgrind_annotate's; its total
// never more than it spends (its self cost plus the inclusive cost of its
// calls); and, for every function on no call cycle that calls no function
// whose callers' calls carry other than what it spends, equal to it. It
// returns how many totals were equal, on no cycle and on cycles, and how
// many functions are on cycles.
func checkTotals(t *testing.T, name string, data []byte, selfOut, inclOut string) (exact, exactOnCycle, onCycles int) {
	t.Helper()
	p, err := Parse(bytes.NewReader(data), pbuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	testutil.CheckProfile(t, name, p)
	spent, cyc, odd := spending(t, data)
	known := knownNames(p)
	for k := range spent {
		known[k] = true // callgrind_annotate names callees that spend nothing of their own
	}
	selfA := parseAnnotate(t, selfOut, known)
	inclA := parseAnnotate(t, inclOut, known)
	o := tables(t, p, selfA.events)
	for k, want := range selfA.rows {
		got := o.self[k]
		if got == nil {
			got = make([]int64, len(want))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %s: self %v, callgrind_annotate %v", name, k, got, want)
		}
	}
	for k, total := range o.total {
		s := spent[k]
		if s == nil {
			t.Errorf("%s: %s is in the profile, not in the file", name, k)
			continue
		}
		if cyc[k] {
			onCycles++
		}
		equal := true
		for e := range total {
			if total[e] > s[e] {
				t.Errorf("%s: %s: total %v, more than it spends (self and calls) %v", name, k, total, s)
			}
			equal = equal && total[e] == s[e]
		}
		switch {
		case equal && cyc[k]:
			exactOnCycle++
		case equal:
			exact++
			if a := inclA.rows[k]; a != nil && fmt.Sprint(a) != fmt.Sprint(total) {
				// callgrind_annotate counts what the calls to a function
				// carry, which callgrind writes other than what it
				// spent where it lost track (a warning names them).
				t.Logf("%s: %s: total %v as it spends, callgrind_annotate (its callers' calls) %v", name, k, total, a)
			}
		case !cyc[k] && odd[k]:
			t.Logf("%s: %s calls a function whose calls carry other than it spends: total %v, spends %v", name, k, total, s)
		case !cyc[k]:
			t.Errorf("%s: %s (on no call cycle): total %v, but it spends %v (self %v), callgrind_annotate --inclusive=yes %v",
				name, k, total, s, o.self[k], inclA.rows[k])
		}
	}
	return exact, exactOnCycle, onCycles
}

// TestGoTotals holds the totals of real dumps of a Go program and of a Go
// test binary, with and without --dump-instr=yes, to their files and to
// callgrind_annotate's outputs committed beside them.
func TestGoTotals(t *testing.T) {
	for _, name := range goDumps {
		t.Run(name, func(t *testing.T) {
			data := readGz(t, filepath.Join(goDir, name+".callgrind.gz"))
			selfOut := string(readGz(t, filepath.Join(goDir, name+".self.txt.gz")))
			inclOut := string(readGz(t, filepath.Join(goDir, name+".inclusive.txt.gz")))
			exact, exactOnCycle, onCycles := checkTotals(t, name, data, selfOut, inclOut)
			t.Logf("%s: %d totals equal to self plus calls on no call cycle; on cycles %d of %d", name, exact, exactOnCycle, onCycles)
			if exact == 0 || onCycles == 0 {
				t.Errorf("%d totals compared on no cycle, %d functions on cycles: not a Go dump's shape", exact, onCycles)
			}
			// On a cycle a function's total is short of what it spends
			// where cost comes back to it round the cycle (recursion,
			// and what callgrind takes for it at Go's stack switches);
			// most are not.
			if 3*exactOnCycle < 2*onCycles {
				t.Errorf("on call cycles %d of %d totals equal to self plus calls, fewer than two thirds", exactOnCycle, onCycles)
			}
		})
	}
}

// TestGoTotalsLive runs callgrind_annotate, when it is installed, on the
// real Go dumps and checks them as TestGoTotals does.
func TestGoTotalsLive(t *testing.T) {
	exe, err := exec.LookPath("callgrind_annotate")
	if err != nil {
		t.Skip("callgrind_annotate is not on PATH (valgrind is not installed): the committed outputs are checked by TestGoTotals")
	}
	tmp := t.TempDir()
	for _, name := range goDumps {
		t.Run(name, func(t *testing.T) {
			data := readGz(t, filepath.Join(goDir, name+".callgrind.gz"))
			path := filepath.Join(tmp, name+".callgrind")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			run := func(args ...string) string {
				cmd := exec.Command(exe, append([]string{"--threshold=100", "--show-percs=no", "--auto=no"}, append(args, path)...)...)
				cmd.Dir = tmp
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%v: %v", cmd.Args, err)
				}
				return string(out)
			}
			checkTotals(t, name, data, run(), run("--inclusive=yes"))
		})
	}
}
