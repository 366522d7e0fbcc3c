package gate

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
)

// The libraries' messages in the command's words: Go options as flags.

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

// FlagText is s with the Go options it names as the command's flags.
func FlagText(s string) string {
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

// FlagWords rewrites, in place, the messages of rep that name Go options
// into the command's flags (flagText), before rep is written in any
// format.
func FlagWords(rep *diff.Report) {
	if rep == nil {
		return
	}
	for i, w := range rep.Warnings {
		rep.Warnings[i] = FlagText(w)
	}
	for i := range rep.Rows {
		row := &rep.Rows[i]
		row.NearMiss = FlagText(row.NearMiss)
		for j, w := range row.Warnings {
			row.Warnings[j] = FlagText(w)
		}
	}
	rep.Headline.Reason = FlagText(rep.Headline.Reason)
}

// BenchWords rewrites, in place, the messages of rep that name bench's Go
// options into the flags of 'hotbudget bench' (WithIgnore: --ignore),
// before rep is written in any format.
func BenchWords(rep *bench.Report) {
	for i, w := range rep.Warnings {
		rep.Warnings[i] = ignoreOption.ReplaceAllStringFunc(w, func(m string) string {
			var keys []string
			for _, q := range quotedKey.FindAllString(m, -1) {
				k, err := strconv.Unquote(q)
				if err != nil {
					return m
				}
				keys = append(keys, k)
			}
			return "hotbudget bench --ignore " + strings.Join(keys, ",")
		})
	}
}

// ignoreOption is bench's suggestion to ignore configuration keys, the
// keys quoted as Go strings.
var (
	ignoreOption = regexp.MustCompile(`bench\.WithIgnore\(((?:"(?:[^"\\]|\\.)*"(?:, )?)+)\)`)
	quotedKey    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)
