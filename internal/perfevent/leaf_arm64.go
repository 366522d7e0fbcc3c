//go:build linux

package perfevent

// On arm64 a function's return address is in the link register (register
// 30, PERF_REG_ARM64_LR) until it saves a frame.
const (
	leafRegs  = 1 << 30
	leafStack = false
)
