//go:build !race

package limits

// raceEnabled reports whether this binary was built with the race detector
// (go test -race).
const raceEnabled = false
