package valgrind_test

import (
	"fmt"

	"github.com/hotbudget/hotbudget/internal/valgrind"
)

func Example() {
	// Run under
	//
	//	GODEBUG=asyncpreemptoff=1 GOGC=off GOMAXPROCS=1 \
	//	valgrind --tool=callgrind --instr-atstart=no ./program
	//
	// callgrind counts the instructions of the work and little else;
	// run natively, the requests do nothing.
	valgrind.StartInstrumentation()
	sum := 0
	for i := range 1000 {
		sum += i
	}
	valgrind.StopInstrumentation()
	fmt.Println(sum, valgrind.RunningOnValgrind() > 0)
	// Output: 499500 false
}
