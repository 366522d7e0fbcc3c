package analysis_test

import (
	"fmt"
	"log"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/loaders"
)

// A Go heap profile read by each of its sample types, as `go tool pprof
// -top -sample_index=...` reads it: bytes and objects, allocated since the
// program started or still in use. Values are bytes or objects, not times:
// Table.Format writes them in their unit.
func ExampleSelection_sampleType() {
	p, err := loaders.Load("../testdata/heap/heap.pb.gz")
	if err != nil {
		log.Fatal(err)
	}
	x, err := analysis.NewIndex(p)
	if err != nil {
		log.Fatal(err)
	}
	for _, st := range []string{"alloc_space", "alloc_objects", "inuse_space", "1"} {
		t, err := x.Table(analysis.Selection{SampleType: st})
		if err != nil {
			log.Fatal(err)
		}
		f := t.Find("main.encode")[0]
		fmt.Printf("%-13s %-19s %-5s main.encode self %s of %s\n", st, t.SampleType, t.Unit, t.Format(f.Self), t.Format(t.Total))
	}
	// Output:
	// alloc_space   alloc_space/bytes   bytes main.encode self 47.01MiB of 66.44MiB
	// alloc_objects alloc_objects/count count main.encode self 192559 of 667713
	// inuse_space   inuse_space/bytes   bytes main.encode self 0B of 4.27MiB
	// 1             alloc_space/bytes   bytes main.encode self 47.01MiB of 66.44MiB
}
