//go:build linux

package perfevent

// On amd64 a function's return address is at its stack pointer until it
// pushes a frame: LeafRet is the word at SP (register 7, PERF_REG_X86_SP).
const (
	leafRegs  = 1 << 7
	leafStack = true
)
