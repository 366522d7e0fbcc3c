//go:build linux && !amd64 && !arm64

package perfevent

// Elsewhere LeafRet is not known.
const (
	leafRegs  = 0
	leafStack = false
)
