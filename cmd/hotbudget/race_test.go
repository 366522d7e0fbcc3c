//go:build race

package main

// raceEnabled says the tests run under the race detector, which makes the
// 50,000-function comparison take minutes.
const raceEnabled = true
