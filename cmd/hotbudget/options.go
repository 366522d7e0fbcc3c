package main

import (
	"regexp"
	"strconv"
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
	"declare equal work with diff.WithSameWork() to judge", "declare equal work with --same-work to judge",
	"pass diff.WithSameWork() when every run did the same work", "pass --same-work (WithSameWork) when every run did the same work",
)

// renameOption is diff's suggestion of a rename, its names quoted as Go
// strings.
var renameOption = regexp.MustCompile(`if it was renamed, diff\.WithRename\(("(?:[^"\\]|\\.)*"), ("(?:[^"\\]|\\.)*")\) judges`)

// flagText is s with the Go options it names as the command's flags.
func flagText(s string) string {
	s = renameOption.ReplaceAllStringFunc(s, func(m string) string {
		sub := renameOption.FindStringSubmatch(m)
		from, err1 := strconv.Unquote(sub[1])
		to, err2 := strconv.Unquote(sub[2])
		if err1 != nil || err2 != nil {
			return m
		}
		return "if it was renamed, --rename '" + from + "=" + to + "' (diff.WithRename) judges"
	})
	return optionFlags.Replace(s)
}

// flagWords rewrites, in place, the messages of rep that name Go options
// into the command's flags (flagText), before rep is written in any
// format.
func flagWords(rep *diff.Report) {
	if rep == nil {
		return
	}
	for i, w := range rep.Warnings {
		rep.Warnings[i] = flagText(w)
	}
	for i := range rep.Rows {
		row := &rep.Rows[i]
		row.NearMiss = flagText(row.NearMiss)
		for j, w := range row.Warnings {
			row.Warnings[j] = flagText(w)
		}
	}
	rep.Headline.Reason = flagText(rep.Headline.Reason)
}
