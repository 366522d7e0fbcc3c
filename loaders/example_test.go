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
	p, err := loaders.Read(strings.NewReader("main;parse;lex 3\nmain;render 2\n"), loaders.WithName("stacks.folded"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(loaders.SourceFormat(p), len(p.Sample), "samples")
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
