package valgrind

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
)

// requestSymbol is request's name in a binary's .gopclntab; the ELF symbol
// table, where there is one, names it with ".abi0" appended, for the ABI of
// assembly functions.
const requestSymbol = "github.com/hotbudget/hotbudget/internal/valgrind.request"

// amd64Preamble is valgrind.h's __SPECIAL_INSTRUCTION_PREAMBLE for
// PLAT_amd64_linux, "rolq $3,%rdi; rolq $13,%rdi; rolq $61,%rdi; rolq
// $51,%rdi", and the request, "xchgq %rbx,%rbx", in the Intel manual's
// encodings: ROL r/m64, imm8 is REX.W C1 /0 ib, XCHG r/m64, r64 is REX.W
// 87 /r; a register operand in r/m has ModRM mod 11. RDI is register 7,
// RBX 3. The bytes valgrind matches (VEX's guest_amd64_toIR.c):
//
//	48 c1 c7 03 48 c1 c7 0d 48 c1 c7 3d 48 c1 c7 33 48 87 db
func amd64Preamble() []byte {
	const rexW = 0x48
	const rdi, rbx = 7, 3
	modrm := func(reg, rm byte) byte { return 0b11<<6 | reg<<3 | rm }
	var b []byte
	for _, n := range []byte{3, 13, 61, 51} {
		b = append(b, rexW, 0xc1, modrm(0, rdi), n)
	}
	return append(b, rexW, 0x87, modrm(rbx, rbx))
}

// arm64Preamble is valgrind.h's __SPECIAL_INSTRUCTION_PREAMBLE for
// PLAT_arm64_linux, "ror x12,x12,#3; ror x12,x12,#13; ror x12,x12,#51; ror
// x12,x12,#61", and the request, "orr x10,x10,x10", in the Arm
// Architecture Reference Manual's encodings, little-endian. ROR
// (immediate) is an alias of EXTR Xd, Xn, Xn, #imm: sf 1, op21 00, 100111,
// N 1, o0 0, Rm, imms, Rn, Rd. ORR (shifted register), 64-bit: sf 1, opc
// 01, 01010, shift 00, N 0, Rm, imm6 0, Rn, Rd. The words valgrind matches
// (VEX's guest_arm64_toIR.c):
//
//	0x93cc0d8c 0x93cc358c 0x93cccd8c 0x93ccf58c 0xaa0a014a
func arm64Preamble() []byte {
	extr := func(rd, rn, rm, imms uint32) uint32 {
		return 1<<31 | 0b00<<29 | 0b100111<<23 | 1<<22 | 0<<21 | rm<<16 | imms<<10 | rn<<5 | rd
	}
	orr := func(rd, rn, rm uint32) uint32 {
		return 1<<31 | 0b01<<29 | 0b01010<<24 | 0b00<<22 | 0<<21 | rm<<16 | 0<<10 | rn<<5 | rd
	}
	var b []byte
	for _, n := range []uint32{3, 13, 51, 61} {
		b = binary.LittleEndian.AppendUint32(b, extr(12, 12, 12, n))
	}
	return binary.LittleEndian.AppendUint32(b, orr(10, 10, 10))
}

// TestPreambleWords checks the derivations above against the bytes
// valgrind matches, written out.
func TestPreambleWords(t *testing.T) {
	amd64 := []byte{0x48, 0xc1, 0xc7, 0x03, 0x48, 0xc1, 0xc7, 0x0d, 0x48, 0xc1, 0xc7, 0x3d, 0x48, 0xc1, 0xc7, 0x33, 0x48, 0x87, 0xdb}
	if got := amd64Preamble(); !bytes.Equal(got, amd64) {
		t.Errorf("amd64 preamble % x, want % x", got, amd64)
	}
	var arm64 []byte
	for _, w := range []uint32{0x93cc0d8c, 0x93cc358c, 0x93cccd8c, 0x93ccf58c, 0xaa0a014a} {
		arm64 = binary.LittleEndian.AppendUint32(arm64, w)
	}
	if got := arm64Preamble(); !bytes.Equal(got, arm64) {
		t.Errorf("arm64 preamble % x, want % x", got, arm64)
	}
}

// TestPreambleEncoding reads request's machine code from a binary for
// amd64 and one for arm64 and finds the preamble and the request in it,
// once: the test binary itself for its own architecture, on Linux, and
// this package's test binary cross-built (go test -c) for the other, a
// slow test (testutil.Slow).
func TestPreambleEncoding(t *testing.T) {
	for _, c := range []struct {
		arch string
		want []byte
	}{
		{"amd64", amd64Preamble()},
		{"arm64", arm64Preamble()},
	} {
		t.Run(c.arch, func(t *testing.T) {
			code := requestCode(t, binaryFor(t, c.arch))
			i := bytes.Index(code, c.want)
			switch {
			case i < 0:
				t.Fatalf("request's code\n% x\nlacks the preamble\n% x", code, c.want)
			case bytes.Count(code, c.want) != 1:
				t.Errorf("request's code\n% x\nholds the preamble more than once", code)
			case c.arch == "arm64" && i%4 != 0:
				t.Errorf("preamble at byte %d of request's code, not at an instruction", i)
			}
			t.Logf("%s: %d bytes of request (to the next function), the preamble at byte %d", c.arch, len(code), i)
		})
	}
}

// binaryFor returns the path of a Linux binary for arch that holds
// request.
func binaryFor(t *testing.T, arch string) string {
	t.Helper()
	if arch == runtime.GOARCH && runtime.GOOS == "linux" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		return exe
	}
	testutil.Slow(t, "cross-builds this package's test binary for linux/"+arch+" (30 s without a build cache)")
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to cross-build for linux/%s: %v", arch, err)
	}
	out := filepath.Join(t.TempDir(), "valgrind.test")
	cmd := exec.Command(gocmd, "test", "-c", "-o", out, ".")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOARCH=%s go test -c: %v\n%s", arch, err, msg)
	}
	return out
}

// requestCode returns the machine code of request in the ELF binary bin,
// to the next function.
func requestCode(t *testing.T, bin string) []byte {
	t.Helper()
	f, st := funcTable(t, bin)
	text := f.Section(".text")
	fn := st.LookupFunc(requestSymbol)
	if fn == nil || fn.End <= fn.Entry || fn.Entry < text.Addr {
		t.Fatalf("%s: no function %s in .gopclntab (%v)", bin, requestSymbol, fn)
	}
	code := make([]byte, fn.End-fn.Entry)
	if _, err := text.ReadAt(code, int64(fn.Entry-text.Addr)); err != nil {
		t.Fatalf("%s: reading %s: %v", bin, fn.Name, err)
	}
	return code
}

// funcTable opens the ELF binary bin, until t ends, and reads its table of
// functions for the runtime, .gopclntab, which go test keeps where it
// strips the symbol table (when it runs a test binary it built, not with
// -c).
func funcTable(t *testing.T, bin string) (*elf.File, *gosym.Table) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	text, tab := f.Section(".text"), f.Section(".gopclntab")
	if text == nil || tab == nil {
		t.Fatalf("%s has no .text or no .gopclntab", bin)
	}
	pcln, err := tab.Data()
	if err != nil {
		t.Fatal(err)
	}
	st, err := gosym.NewTable(nil, gosym.NewLineTable(pcln, text.Addr))
	if err != nil {
		t.Fatal(err)
	}
	return f, st
}
