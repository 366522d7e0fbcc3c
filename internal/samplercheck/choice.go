package samplercheck

import "fmt"

// SamplerEnv names the environment variable that picks the time sampler of
// perfassert.Capture and of record: "perf" (perf events, checked as this
// package checks them), "pprof" (runtime/pprof) or "auto" (perf events
// where the check allows them, else runtime/pprof; also when unset).
const SamplerEnv = "HOTBUDGET_SAMPLER"

// Sampler reads SamplerEnv through getenv (os.Getenv, or a command's own
// environment) and returns "auto", "perf" or "pprof", or an error naming
// the variable and what it may hold. It is the one place the variable is
// read.
func Sampler(getenv func(string) string) (string, error) {
	switch v := getenv(SamplerEnv); v {
	case "", "auto":
		return "auto", nil
	case "perf", "pprof":
		return v, nil
	default:
		return "", fmt.Errorf("%s=%q: want \"perf\", \"pprof\" or \"auto\"", SamplerEnv, v)
	}
}
