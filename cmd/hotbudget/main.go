// Command hotbudget reads CPU profiles and traces of every common format,
// shows where the time goes, converts between formats, compares runs against
// baselines and gates pull requests on budget files.
//
// Usage:
//
//	hotbudget top [flags] FILE
//	hotbudget convert [--to pprof|speedscope|folded] IN OUT
//	hotbudget diff [flags] BASE... -- HEAD...
//	hotbudget bench [flags] OLD NEW
//	hotbudget record [flags] BASE HEAD [PACKAGE...]
//	hotbudget merge [flags] DIR...
//	hotbudget check --budget FILE [--baseline BASE...] PROFILE...
//	hotbudget history append|show|html|prune [flags]
//	hotbudget version
//
// Every subcommand takes --help. Exit codes are part of the interface: 0 when
// all is well (nothing regressed, every rule passed), 1 when a regression was
// found or a budget rule failed, 2 on a usage or input error (the message on
// stderr names the file).
//
// Under GitHub Actions (GITHUB_ACTIONS=true) diff, bench, record, merge and
// check also append their Markdown report to the file named by
// GITHUB_STEP_SUMMARY and print ::error annotations naming each function
// that failed.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
