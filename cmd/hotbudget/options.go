package main

import (
	"strings"

	"github.com/hotbudget/hotbudget/diff"
)

// optionFlags turns the Go options the libraries' messages name (a user
// of package diff sets them in code) into the flags that set them here.
// Every message of the libraries that names an option in a way the command
// sets with a flag has its phrase here; TestOptionFlags checks that each
// phrase is still what the library writes.
var optionFlags = strings.NewReplacer(
	"(diff.WithKey(diff.KeyName))", "(--key name)",
	`gate every function with diff.WithGate(regexp.MustCompile(".")))`, "gate every function with --gate '.')",
	"(diff.WithAssumption(diff.AssumeModel))", "(WithAssumption(AssumeModel), --assume model)",
)

// flagWords rewrites, in place, the messages of rep that name Go options
// into the command's flags (optionFlags), before rep is written in any
// format.
func flagWords(rep *diff.Report) {
	if rep == nil {
		return
	}
	for i, w := range rep.Warnings {
		rep.Warnings[i] = optionFlags.Replace(w)
	}
	for i := range rep.Rows {
		row := &rep.Rows[i]
		row.NearMiss = optionFlags.Replace(row.NearMiss)
		for j, w := range row.Warnings {
			row.Warnings[j] = optionFlags.Replace(w)
		}
	}
	rep.Headline.Reason = optionFlags.Replace(rep.Headline.Reason)
}
