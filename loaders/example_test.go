package loaders_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/hotbudget/hotbudget/loaders"
)

// Read detects the format from the content: here folded stacks, whose
// counts become 1 ms samples, leaf first as in pprof.
func ExampleRead() {
	const in = "main;parse;lex 3\nmain;render 2\n"
	p, err := loaders.Read(strings.NewReader(in), loaders.WithName("stacks.folded"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(loaders.Detect([]byte(in)), len(p.Sample), "samples")
	for _, st := range p.SampleType {
		fmt.Println(st.Type + "/" + st.Unit)
	}
	for _, s := range p.Sample {
		fmt.Println(s.Location[0].Line[0].Function.Name, s.Value)
	}
	// Output:
	// folded 2 samples
	// samples/count
	// cpu/nanoseconds
	// lex [3 3000000]
	// render [2 2000000]
}

// Detect names a format from its first bytes.
func ExampleDetect() {
	for _, head := range []string{
		`{"nodes":[{"id":1,"callFrame":{}}],"startTime":0}`,
		`{"traceEvents":[]}`,
		`[{"ph":"X","name":"a","ts":1,"dur":2}]`,
		"main;work 10\n",
	} {
		fmt.Println(loaders.Detect([]byte(head)))
	}
	// Output:
	// cpuprofile
	// chrome-trace
	// chrome-trace
	// folded
}

// Load reads a file; DetectFile says what it is without reading it all.
func ExampleLoad() {
	const path = "../testdata/cpuprofile/busy.cpuprofile"
	f, err := loaders.DetectFile(path)
	if err != nil {
		log.Fatal(err)
	}
	p, err := loaders.Load(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f, p.SampleType[1].Type, len(loaders.Warnings(p)), "warnings")
	// Output:
	// cpuprofile cpu 0 warnings
}

// LoadIndex reads a Go profile (pprof's protobuf, gzipped or not) on a
// fast path that never builds a *profile.Profile, and any other format
// through its loader.
func ExampleLoadIndex() {
	x, err := loaders.LoadIndex("../testdata/pprof/busy.pb.gz")
	if err != nil {
		log.Fatal(err)
	}
	t, err := x.Table()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.SampleType, "every", t.Period)
	for _, name := range []string{"main.parseRecords", "main.renderReport"} {
		f := t.Find(name)[0]
		fmt.Printf("%s total %s\n", name, t.Format(f.Total))
	}
	// Output:
	// cpu/nanoseconds every 10ms
	// main.parseRecords total 990ms
	// main.renderReport total 480ms
}
