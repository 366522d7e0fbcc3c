package textfmt

import (
	"fmt"
	"strings"
)

// Stack writes a stack's frames innermost first, joined by " <- ", with at
// most max of them and the number left out when there are more than max+1.
func Stack(frames []string, max int) string {
	if len(frames) <= max+1 {
		return strings.Join(frames, " <- ")
	}
	return strings.Join(frames[:max], " <- ") + fmt.Sprintf(" <- ... (%d more)", len(frames)-max)
}
