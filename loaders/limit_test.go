package loaders

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memChildEnv makes the test binary load the file it names, print its peak
// resident memory and the error, and exit (see TestMain).
const memChildEnv = "HOTBUDGET_LOADERS_MEMORY_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(memChildEnv); path != "" {
		_, err := Load(path)
		hwm, herr := peakRSS()
		if herr != nil {
			fmt.Println(herr)
			os.Exit(1)
		}
		fmt.Printf("%d\n%v\n", hwm, err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// peakRSS is this process's peak resident memory in bytes (VmHWM).
func peakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}

// spacesGzip returns a gzip stream that inflates to mib MiB of spaces: a
// member holding 1 MiB of spaces, repeated (gzip readers, Go's and
// gunzip, read concatenated members as one stream). It checks the member.
func spacesGzip(t testing.TB, mib int) []byte {
	t.Helper()
	spaces := bytes.Repeat([]byte(" "), 1<<20)
	member := gz(t, spaces)
	zr, err := gzip.NewReader(bytes.NewReader(member))
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	if back, err := io.ReadAll(zr); err != nil || !bytes.Equal(back, spaces) {
		t.Fatalf("the member does not inflate to 1 MiB of spaces: %v", err)
	}
	return bytes.Repeat(member, mib)
}

// TestHostileGzipBoundedMemory: a gzip stream that inflates to 2 GiB of
// spaces, and the same gzipped again (which pprof's parser used to inflate
// whole: 4.5 GB resident and 34 s before an error), are refused from their
// first 64 KiB with an error naming the file and what is in it. Memory is
// measured in a child process (peak resident memory, Linux) and here
// (bytes allocated, any OS).
func TestHostileGzipBoundedMemory(t *testing.T) {
	const limit = 100 << 20
	dir := t.TempDir()
	once := spacesGzip(t, 2048)
	files := map[string][]byte{
		filepath.Join(dir, "spaces.gz"):    once,
		filepath.Join(dir, "spaces.gz.gz"): gz(t, once),
	}
	for path, b := range files {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := path + ": only whitespace in the first 64 KiB: not a profile"
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			start := time.Now()
			_, err := Load(path)
			took := time.Since(start)
			runtime.ReadMemStats(&m1)
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v, want %q", err, want)
			}
			alloc := m1.TotalAlloc - m0.TotalAlloc
			t.Logf("%d-byte file refused in %v, %d bytes allocated", len(b), took, alloc)
			if alloc > limit {
				t.Errorf("allocated %d bytes to refuse it, want under %d", alloc, limit)
			}

			if runtime.GOOS != "linux" {
				t.Skip("peak resident memory is read from Linux's /proc/self/status")
			}
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), memChildEnv+"="+path)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			hwm, msg, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
			peak, err := strconv.ParseInt(hwm, 10, 64)
			if err != nil {
				t.Fatalf("child printed %q", out)
			}
			t.Logf("child: peak resident memory %.1f MB", float64(peak)/1e6)
			if msg != want {
				t.Errorf("child's error %q, want %q", msg, want)
			}
			if peak > limit {
				t.Errorf("peak resident memory %d bytes, want under %d", peak, limit)
			}
		})
	}
}

// TestMaxBytes: input larger than the limit is refused with ErrTooLarge,
// whatever the format (a trace the JSON loader would accept truncated
// included); input of exactly the limit loads; the environment variable
// sets the default and WithMaxBytes wins over it.
func TestMaxBytes(t *testing.T) {
	folded := []byte(strings.Repeat("main;work 1\n", 100)) // 1200 bytes
	simple, err := os.ReadFile(corpus + "pprof/simple.prof")
	if err != nil {
		t.Fatal(err)
	}
	trace, err := os.ReadFile(corpus + "trace-event/simple.json")
	if err != nil {
		t.Fatal(err)
	}
	tooLarge := func(t *testing.T, in []byte, opts ...Option) error {
		t.Helper()
		_, err := Read(bytes.NewReader(in), append([]Option{WithName("big")}, opts...)...)
		if !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), "big: ") {
			t.Errorf("err = %v, want ErrTooLarge naming the input", err)
		}
		return err
	}
	loads := func(t *testing.T, in []byte, opts ...Option) {
		t.Helper()
		if _, err := Read(bytes.NewReader(in), opts...); err != nil {
			t.Errorf("err = %v, want the profile", err)
		}
	}

	t.Run("folded", func(t *testing.T) {
		err := tooLarge(t, folded, WithMaxBytes(1199))
		if want := "big: input too large: more than 1199 bytes after decompression; raise the limit with HOTBUDGET_MAX_BYTES or loaders.WithMaxBytes"; err != nil && err.Error() != want {
			t.Errorf("err = %q, want %q", err, want)
		}
		loads(t, folded, WithMaxBytes(1200))
		tooLarge(t, gz(t, folded), WithMaxBytes(1199)) // counted after decompression
		loads(t, gz(t, folded), WithMaxBytes(1200))
	})
	t.Run("pprof", func(t *testing.T) {
		tooLarge(t, simple, WithMaxBytes(512))
		loads(t, simple, WithMaxBytes(64<<10))
	})
	t.Run("a trace cut by the limit is not read as a partial trace", func(t *testing.T) {
		tooLarge(t, trace, WithMaxBytes(int64(len(trace)/2)))
		loads(t, trace, WithMaxBytes(int64(len(trace))))
	})
	t.Run("protobuf field longer than the limit", func(t *testing.T) {
		// string_table entry claiming 5000 bytes, under a 1 KiB limit.
		in := append([]byte{0x32, 0x88, 0x27}, make([]byte, 100)...)
		err := tooLarge(t, in, WithMaxBytes(1<<10))
		if want := "field 6 at offset 3 is 5000 bytes long, more than the limit of 1 KiB (1024 bytes)"; err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to contain %q", err, want)
		}
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv(maxBytesEnv, "1000")
		tooLarge(t, folded)
		loads(t, folded, WithMaxBytes(2000))
		t.Setenv(maxBytesEnv, "2KiB")
		loads(t, folded)
		tooLarge(t, folded, WithMaxBytes(1000))
		t.Setenv(maxBytesEnv, "0")
		loads(t, folded)
		t.Setenv(maxBytesEnv, "2 GB")
		_, err := Read(bytes.NewReader(folded), WithName("in"))
		if want := `in: HOTBUDGET_MAX_BYTES="2 GB": want a number of bytes, such as 2147483648 or 2GiB (0: no limit)`; err == nil || err.Error() != want {
			t.Errorf("err = %v, want %q", err, want)
		}
	})
	t.Run("no limit", func(t *testing.T) {
		loads(t, folded, WithMaxBytes(0))
		loads(t, folded, WithMaxBytes(-1))
	})
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1000": 1000, "2KiB": 2048, "512MiB": 512 << 20, "2GiB": 2 << 30, "1TiB": 1 << 40} {
		if got, err := parseSize(in); got != want || err != nil {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5GiB", "2GB", "GiB", "9999999999TiB", "1 KiB"} {
		if n, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, n)
		}
	}
}

// FuzzReadGzip feeds gzip streams (whole, cut, corrupted, nested, several
// members) through Read, and each input also gzipped once more: every
// input is read as a valid profile or refused with an error naming it;
// none may panic, hang or take more memory than the limit allows.
func FuzzReadGzip(f *testing.F) {
	for _, name := range []string{
		"pprof/simple.prof", "pprof/sample.cpu", "cpuprofile/simple.cpuprofile", "trace-event/simple.json",
		"speedscope/simple.speedscope.json", "chrome-trace/simple.json.gz",
	} {
		b, err := os.ReadFile(corpus + name)
		if err != nil {
			f.Fatal(err)
		}
		if !isGzip(b) {
			b = gz(f, b)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add(gz(f, nil))
	f.Add(gz(f, gz(f, []byte("main;a 1\n"))))
	f.Add(gz(f, bytes.Repeat([]byte(" "), 70<<10)))
	f.Add(bytes.Repeat(gz(f, []byte("main;a 1\n")), 3))
	f.Add(gz(f, []byte("go 1.26 trace\x00\x00\x00")))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, in := range [][]byte{b, gz(t, b)} {
			p, err := Read(bytes.NewReader(in), WithName("fuzz.gz"), WithMaxBytes(16<<20))
			if err != nil {
				if !strings.HasPrefix(err.Error(), "fuzz.gz: ") {
					t.Fatalf("error does not name the input: %v", err)
				}
				continue
			}
			if err := p.CheckValid(); err != nil {
				t.Fatalf("Read returned an invalid profile: %v", err)
			}
		}
	})
}

// MaxBytes resolves the limit as Read applies it: the option first, then
// the environment, then the default.
func TestMaxBytesResolves(t *testing.T) {
	t.Setenv(maxBytesEnv, "")
	for _, c := range []struct {
		env  string
		opts []Option
		want int64
	}{
		{"", nil, defaultMaxBytes},
		{"2KiB", nil, 2048},
		{"0", nil, math.MaxInt64},
		{"2KiB", []Option{WithMaxBytes(100)}, 100},
		{"", []Option{WithMaxBytes(0)}, math.MaxInt64},
	} {
		t.Setenv(maxBytesEnv, c.env)
		if got, err := maxBytes(c.opts...); got != c.want || err != nil {
			t.Errorf("%s=%q, %d options: %d, %v; want %d", maxBytesEnv, c.env, len(c.opts), got, err, c.want)
		}
	}
	t.Setenv(maxBytesEnv, "2 GB")
	if _, err := maxBytes(); err == nil || !strings.Contains(err.Error(), `HOTBUDGET_MAX_BYTES="2 GB"`) {
		t.Errorf("malformed environment: %v", err)
	}
}
