// Command goapp is the go-app workload of the verdict benchmark: a small
// access-log pipeline written for it. It synthesises JSON log lines from a
// fixed seed, decodes them with encoding/json, checksums and normalises
// them, routes them with regexp, aggregates them into per-route latency
// histograms, and every few hundred records renders a report with
// text/template and compresses it with compress/flate.
//
//	goapp -variant A|B|C -records N -o FILE.pb.gz
//
// Every variant processes the same records and reports the same number of
// operations (records) in the profile's hotbudget record:
//
//   - A is the program as written.
//   - B makes one function, main.checksum, do 50% more work: it hashes
//     every other line twice (a realistic slip: a second key computed on
//     one code path).
//   - C makes every function of the program's own code do about 15% more
//     of its inner work, each on 15% of its inputs: the whole program is
//     about 15% slower for the same work.
package main

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/hotbudget/hotbudget/testdata/verdict/gen/gorun"
)

type record struct {
	Time      string   `json:"time"`
	Method    string   `json:"method"`
	Path      string   `json:"path"`
	Status    int      `json:"status"`
	Bytes     int      `json:"bytes"`
	LatencyUS int      `json:"latency_us"`
	UserAgent string   `json:"ua"`
	Client    string   `json:"client"`
	Tags      []string `json:"tags"`
}

// variant is "A", "B" or "C".
var variant = "A"

// again says whether the i-th input of a function does its inner work a
// second time: in C every function repeats 15% of its inputs, in B only
// checksum (which passes target) repeats 50% of them.
func again(i int, target bool) bool {
	switch {
	case variant == "C":
		return i%20 < 3
	case variant == "B" && target:
		return i%2 == 0
	}
	return false
}

var (
	methods = []string{"GET", "GET", "GET", "POST", "PUT", "DELETE"}
	agents  = []string{
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_2) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
		"curl/8.5.0",
		"Go-http-client/2.0",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	}
	segments = []string{"api", "v1", "v2", "Users", "orders", "Items", "search", "static", "img", "Accounts", "settings", "export"}
	tagWords = []string{"cache-hit", "cache-miss", "gzip", "auth", "anon", "retry", "slow", "tls13"}
)

// synthesize appends one JSON log line for record i to buf.
func synthesize(rng *rand.Rand, i int, buf []byte) []byte {
	buf = append(buf, `{"time":"2026-11-23T10:`...)
	buf = strconv.AppendInt(buf, int64(10+i/60%50), 10)
	buf = append(buf, ':')
	buf = strconv.AppendInt(buf, int64(10+i%50), 10)
	buf = append(buf, `Z","method":`...)
	buf = strconv.AppendQuote(buf, methods[rng.IntN(len(methods))])
	buf = append(buf, `,"path":"`...)
	for k, n := 0, 2+rng.IntN(4); k < n; k++ {
		buf = append(buf, '/')
		if rng.IntN(3) == 0 {
			buf = strconv.AppendInt(buf, int64(rng.IntN(1_000_000)), 10)
		} else {
			buf = append(buf, segments[rng.IntN(len(segments))]...)
		}
	}
	if rng.IntN(4) == 0 {
		buf = append(buf, "?page="...)
		buf = strconv.AppendInt(buf, int64(rng.IntN(50)), 10)
	}
	buf = append(buf, `","status":`...)
	status := 200
	switch r := rng.IntN(100); {
	case r < 5:
		status = 500
	case r < 12:
		status = 404
	case r < 20:
		status = 304
	}
	buf = strconv.AppendInt(buf, int64(status), 10)
	buf = append(buf, `,"bytes":`...)
	buf = strconv.AppendInt(buf, int64(rng.IntN(200_000)), 10)
	buf = append(buf, `,"latency_us":`...)
	buf = strconv.AppendInt(buf, int64(rng.ExpFloat64()*20_000), 10)
	buf = append(buf, `,"ua":`...)
	buf = strconv.AppendQuote(buf, agents[rng.IntN(len(agents))])
	buf = append(buf, `,"client":"10.`...)
	for k := 0; k < 3; k++ {
		buf = strconv.AppendInt(buf, int64(rng.IntN(256)), 10)
		if k < 2 {
			buf = append(buf, '.')
		}
	}
	buf = append(buf, `","tags":[`...)
	for k, n := 0, rng.IntN(4); k < n; k++ {
		if k > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendQuote(buf, tagWords[rng.IntN(len(tagWords))])
	}
	return append(buf, "]}\n"...)
}

// decode parses one line into r.
func decode(i int, line []byte, r *record) error {
	*r = record{}
	if again(i, false) {
		var scratch record
		if err := json.Unmarshal(line, &scratch); err != nil {
			return err
		}
	}
	return json.Unmarshal(line, r)
}

// checksum is FNV-1a over the line's 16-bit words, as a deduplication
// key. In B it hashes every other line twice (a second key added).
func checksum(i int, line []byte) uint32 {
	h := uint32(2166136261)
	for rep := 0; rep < 1 || rep == 1 && again(i, true); rep++ {
		for j := 0; j+1 < len(line); j += 2 {
			h ^= uint32(line[j]) | uint32(line[j+1])<<8
			h *= 16777619
		}
	}
	return h
}

// normalizePath lower-cases a path, drops its query and replaces numeric
// segments by ":id", byte by byte.
func normalizePath(i int, p string) string {
	var b [128]byte
	var out []byte
	for rep := 0; rep < 1 || rep == 1 && again(i, false); rep++ {
		out = b[:0]
		digits := true
		start := 0
		for j := 0; j < len(p); j++ {
			c := p[j]
			switch {
			case c == '?':
				j = len(p)
				continue
			case c == '/':
				if digits && len(out) > start {
					out = append(out[:start], ":id"...)
				}
				out = append(out, '/')
				start, digits = len(out), true
				continue
			case c >= 'A' && c <= 'Z':
				c += 'a' - 'A'
			}
			if c < '0' || c > '9' {
				digits = false
			}
			out = append(out, c)
		}
		if digits && len(out) > start {
			out = append(out[:start], ":id"...)
		}
	}
	return string(out)
}

var routes = []struct {
	name string
	re   *regexp.Regexp
}{
	{"users", regexp.MustCompile(`^/api/v[12]/users(/:id)?(/settings)?$`)},
	{"orders", regexp.MustCompile(`^/api/v[12]/(users/:id/)?orders(/:id)*$`)},
	{"items", regexp.MustCompile(`^(/api)?(/v[12])?/items(/:id|/search)*$`)},
	{"static", regexp.MustCompile(`^/(static|img)(/[a-z:]+)+$`)},
	{"accounts", regexp.MustCompile(`^/api/v[12]/accounts(/:id)?(/export|/settings)?`)},
	{"search", regexp.MustCompile(`/search($|/)`)},
}

// route names the first route whose pattern matches the path.
func route(i int, p string) string {
	name := "other"
	for _, r := range routes {
		if r.re.MatchString(p) {
			name = r.name
			break
		}
	}
	if again(i, false) {
		for _, r := range routes {
			if r.re.MatchString(p) {
				break
			}
		}
	}
	return name
}

// family names the user agent's family.
func family(i int, ua string) string {
	f := uaFamily(ua)
	if again(i, false) {
		f = uaFamily(ua)
	}
	return f
}

func uaFamily(ua string) string {
	switch {
	case strings.Contains(ua, "bot"):
		return "bot"
	case strings.Contains(ua, "Firefox/"):
		return "firefox"
	case strings.Contains(ua, "Chrome/"):
		return "chrome"
	case strings.Contains(ua, "Safari/"):
		return "safari"
	case strings.HasPrefix(ua, "curl/"), strings.HasPrefix(ua, "Go-http-client/"):
		return "cli"
	}
	return "other"
}

var bounds = func() []int {
	var b []int
	for v := 100; v < 2_000_000; v = v * 5 / 4 {
		b = append(b, v)
	}
	return b
}()

type stats struct {
	count, errors, bytes int
	hist                 []int
	families             map[string]int
	tags                 map[string]int
}

// observe adds one record to its route's statistics.
func observe(i int, agg map[string]*stats, name, fam string, r *record) {
	for rep := 0; rep < 1 || rep == 1 && again(i, false); rep++ {
		s := agg[name]
		if s == nil {
			s = &stats{hist: make([]int, len(bounds)+1), families: map[string]int{}, tags: map[string]int{}}
			agg[name] = s
		}
		if rep == 1 {
			break // the repeated lookup is the extra work
		}
		s.count++
		s.bytes += r.Bytes
		if r.Status >= 500 {
			s.errors++
		}
		k := 0
		for k < len(bounds) && r.LatencyUS >= bounds[k] {
			k++
		}
		s.hist[k]++
		s.families[fam]++
		for _, t := range r.Tags {
			s.tags[t]++
		}
	}
}

type row struct {
	Route                 string
	Count, Errors         int
	MeanBytes             int
	P50, P90, P99         int
	TopFamily, TopTag     string
	FamilyShare, ErrShare string
}

var report = template.Must(template.New("report").Parse(`batch {{.Batch}}: {{len .Rows}} routes
{{range .Rows}}{{printf "%-9s" .Route}} n={{.Count}} err={{.Errors}} ({{.ErrShare}}) bytes~{{.MeanBytes}} p50={{.P50}}us p90={{.P90}}us p99={{.P99}}us top={{.TopFamily}} {{.FamilyShare}} tag={{.TopTag}}
{{end}}`))

// summarize turns the statistics into sorted report rows.
func summarize(i int, agg map[string]*stats) []row {
	var rows []row
	for rep := 0; rep < 1 || rep == 1 && again(i, false); rep++ {
		rows = rows[:0]
		for name, s := range agg {
			rows = append(rows, row{
				Route: name, Count: s.count, Errors: s.errors, MeanBytes: s.bytes / max(s.count, 1),
				P50: quantile(s, 0.5), P90: quantile(s, 0.9), P99: quantile(s, 0.99),
				TopFamily: top(s.families), TopTag: top(s.tags),
				FamilyShare: fmt.Sprintf("%.1f%%", 100*float64(s.families[top(s.families)])/float64(max(s.count, 1))),
				ErrShare:    fmt.Sprintf("%.2f%%", 100*float64(s.errors)/float64(max(s.count, 1))),
			})
		}
		sort.Slice(rows, func(a, b int) bool {
			return rows[a].Count > rows[b].Count || rows[a].Count == rows[b].Count && rows[a].Route < rows[b].Route
		})
	}
	return rows
}

func quantile(s *stats, q float64) int {
	want := int(q * float64(s.count))
	seen := 0
	for k, n := range s.hist {
		seen += n
		if seen > want {
			if k < len(bounds) {
				return bounds[k]
			}
			return bounds[len(bounds)-1]
		}
	}
	return 0
}

func top(m map[string]int) string {
	best, bn := "", -1
	for k, n := range m {
		if n > bn || n == bn && k < best {
			best, bn = k, n
		}
	}
	return best
}

// render executes the report template and compresses its text.
func render(i, batch int, rows []row, out io.Writer) (int, error) {
	var text bytes.Buffer
	for rep := 0; rep < 1 || rep == 1 && again(i, false); rep++ {
		text.Reset()
		if err := report.Execute(&text, struct {
			Batch int
			Rows  []row
		}{batch, rows}); err != nil {
			return 0, err
		}
	}
	var z bytes.Buffer
	for rep := 0; rep < 1 || rep == 1 && again(i, false); rep++ {
		z.Reset()
		w, err := flate.NewWriter(&z, 6)
		if err != nil {
			return 0, err
		}
		w.Write(bytes.Repeat(text.Bytes(), 8))
		w.Close()
	}
	return out.Write(z.Bytes())
}

func run(records int) (int, error) {
	rng := rand.New(rand.NewPCG(2026, 11))
	agg := map[string]*stats{}
	seen := map[uint32]int{}
	crc := crc32.NewIEEE()
	var line []byte
	var r record
	batch := 0
	for i := 0; i < records; i++ {
		line = synthesize(rng, i, line[:0])
		if err := decode(i, line, &r); err != nil {
			return 0, fmt.Errorf("record %d: %w", i, err)
		}
		seen[checksum(i, line)]++
		p := normalizePath(i, r.Path)
		observe(i, agg, route(i, p), family(i, r.UserAgent), &r)
		if (i+1)%400 == 0 {
			batch++
			if _, err := render(batch, batch, summarize(batch, agg), crc); err != nil {
				return 0, err
			}
		}
	}
	if len(seen) == 0 || crc.Sum32() == 0 {
		return 0, fmt.Errorf("no output")
	}
	return records, nil
}

func main() {
	out := flag.String("o", "", "write the profile (gzipped pprof) to `file`")
	records := flag.Int("records", 150_000, "number of log records to process")
	flag.StringVar(&variant, "variant", "A", "program variant: A, B or C")
	flag.Parse()
	if *out == "" || (variant != "A" && variant != "B" && variant != "C") {
		flag.Usage()
		os.Exit(2)
	}
	err := gorun.Profile(*out, "go-app "+variant, "op", func() int {
		n, err := run(*records)
		if err != nil {
			fmt.Fprintln(os.Stderr, "goapp:", err)
			os.Exit(1)
		}
		return n
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "goapp:", err)
		os.Exit(1)
	}
}
