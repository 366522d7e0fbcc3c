//go:build race

package perfassert_test

const raceEnabled = true
