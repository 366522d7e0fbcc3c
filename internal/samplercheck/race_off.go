//go:build !race

package samplercheck

const raceEnabled = false
