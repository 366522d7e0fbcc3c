package valgrind

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
)

// ErrMissing is what Find returns, wrapped with how to install valgrind,
// when valgrind is not on the PATH.
var ErrMissing = errors.New("valgrind is not installed")

// Find returns the path of the valgrind program, or an error wrapping
// ErrMissing that says how to install it, or one saying that this platform
// cannot run the exact instrument.
func Find() (string, error) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		return "", fmt.Errorf("counting instructions needs valgrind on linux/amd64 or linux/arm64; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	vg, err := exec.LookPath("valgrind")
	if err != nil {
		return "", fmt.Errorf("%w: install it (Debian, Ubuntu: sudo apt-get install valgrind; in a GitHub workflow, a step `run: sudo apt-get install -y valgrind`)", ErrMissing)
	}
	return vg, nil
}

// Version is the installed valgrind's version ("valgrind-3.19.0"), or ""
// when there is none.
var Version = sync.OnceValue(func() string {
	vg, err := exec.LookPath("valgrind")
	if err != nil {
		return ""
	}
	out, err := exec.Command(vg, "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
})

// Run says how to run a program under valgrind: the one place the
// project's commands and tests build valgrind's command line and the
// environment that makes counts repeat.
type Run struct {
	// Tool is valgrind's tool: "callgrind" when empty; "none" runs the
	// program on valgrind's emulated CPU without a tool.
	Tool string
	// Out is callgrind's output file (--callgrind-out-file).
	Out string
	// InstrAtStart false starts callgrind with instrumentation off, until
	// the program switches it on (StartInstrumentation).
	InstrAtStart bool
	// Cache, when set, makes callgrind simulate these caches
	// (--cache-sim=yes with --I1, --D1 and --LL), whose events (Dr, Dw,
	// I1mr, D1mr, D1mw, ILmr, DLmr, DLmw) follow Ir in the dump; without
	// it callgrind counts instructions alone. Its options come after
	// Extra, so that they win over any cache Extra names.
	Cache *Geometry
	// Extra are further tool options, placed after the ones above.
	Extra []string
}

// Args returns valgrind's arguments for running program with args: the
// tool's options, then the program and its arguments. Callgrind writes
// every instruction's address, uncompressed, as the project's reader
// expects.
func (r Run) Args(program string, args ...string) []string {
	tool := r.Tool
	if tool == "" {
		tool = "callgrind"
	}
	out := []string{"--tool=" + tool}
	if tool == "callgrind" {
		if !r.InstrAtStart {
			out = append(out, "--instr-atstart=no")
		}
		out = append(out, "--dump-instr=yes", "--compress-pos=no", "--compress-strings=no")
		if r.Out != "" {
			out = append(out, "--callgrind-out-file="+r.Out)
		}
	} else {
		out = append(out, "-q")
	}
	out = append(out, r.Extra...)
	if r.Cache != nil && tool == "callgrind" {
		out = append(out, r.Cache.Args()...)
	}
	out = append(out, program)
	return append(out, args...)
}

// Command returns the command that runs program with args under valgrind
// vg (from Find) as r says, in the environment Env makes of env.
func (r Run) Command(ctx context.Context, vg string, env []string, program string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, vg, r.Args(program, args...)...)
	cmd.Env = Env(env)
	return cmd
}

// RepeatGODEBUG are the GODEBUG settings Env adds.
const RepeatGODEBUG = "asyncpreemptoff=1,randautoseed=0,randseednop=1"

// Env returns env with the settings under which a Go program's counts
// repeat under valgrind: one P (GOMAXPROCS=1), no garbage collection
// (GOGC=off), no asynchronous preemption (GODEBUG asyncpreemptoff=1),
// which callgrind also needs, and math/rand's top-level functions seeded
// alike in every process (GODEBUG randautoseed=0, randseednop=1: seeded
// with 1, Seed a no-op), all added after the GODEBUG settings env has. A
// benchmark that builds its input from math/rand's global generator
// (google/btree's from a permutation seeded with the time) otherwise
// counts another input in every process: its counts moved by 5% between
// processes of one commit and failed it. The keys in drop are removed
// from env too.
func Env(env []string, drop ...string) []string {
	out := make([]string, 0, len(env)+3)
	godebug := RepeatGODEBUG
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "GOGC" || k == "GOMAXPROCS":
			continue
		case k == "GODEBUG":
			if v != "" {
				godebug = v + "," + godebug
			}
			continue
		}
		dropped := false
		for _, d := range drop {
			dropped = dropped || k == d
		}
		if !dropped {
			out = append(out, kv)
		}
	}
	return append(out, "GODEBUG="+godebug, "GOGC=off", "GOMAXPROCS=1")
}
