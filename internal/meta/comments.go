package meta

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
)

// The comments hotbudget keeps in a profile besides the record. Each is
// written and read here and nowhere else (a test in this package fails when
// another file spells one of the prefixes).
const (
	// exactComment marks a profile whose values are measured, not
	// samples: durations (a trace's regions) or counts (callgrind's
	// instructions).
	exactComment = "hotbudget: exact values (not sampled)"
	// legacyExact is exactComment as profiles written before counts
	// were exact too say it.
	legacyExact = "hotbudget: exact durations (not sampled)"
	// warningPrefix starts every loader warning.
	warningPrefix = "hotbudget warning: "
	// formatPrefix starts the comment that names the input format.
	formatPrefix = "hotbudget format: "
	// allocPrefix starts the comment that holds a capture's allocation
	// profile, in base64 ("#": pprof's reports leave it out);
	// legacyAllocPrefix started it before (read, never written).
	allocPrefix       = "# hotbudget allocs: "
	legacyAllocPrefix = "hotbudget allocs: "
	// The comments Capture wrote before the record existed, read by Get.
	legacyName       = "hotbudget name: "
	legacyBuild      = "hotbudget build: "
	legacyIterations = "hotbudget iterations: "
)

// Prefixes returns the starts of every comment this package writes or
// reads, for the test that keeps other code from spelling them.
func Prefixes() []string {
	return []string{CommentPrefix, legacyPrefix, exactComment, legacyExact, warningPrefix, formatPrefix, allocPrefix, legacyAllocPrefix, legacyName, legacyBuild, legacyIterations}
}

// MarkExact returns comments with the mark of a profile whose values are
// measured durations or counts rather than samples (IsExact), added once.
func MarkExact(comments []string) []string {
	if IsExact(comments) {
		return comments
	}
	return append(comments, exactComment)
}

// IsExact reports whether comments carry the mark MarkExact adds.
func IsExact(comments []string) bool {
	return slices.Contains(comments, exactComment) || slices.Contains(comments, legacyExact)
}

// AppendWarning returns comments with the loader warning w added.
func AppendWarning(comments []string, w string) []string {
	return append(comments, warningPrefix+w)
}

// Warnings returns the loader warnings AppendWarning kept in comments, in
// order.
func Warnings(comments []string) []string {
	var out []string
	for _, c := range comments {
		if w, ok := strings.CutPrefix(c, warningPrefix); ok {
			out = append(out, w)
		}
	}
	return out
}

// AppendFormat returns comments with the name of the format the profile
// was loaded from (Format).
func AppendFormat(comments []string, format string) []string {
	return append(comments, formatPrefix+format)
}

// Format returns the format AppendFormat named in comments; "" when none
// did.
func Format(comments []string) string {
	for _, c := range comments {
		if f, ok := strings.CutPrefix(c, formatPrefix); ok {
			return f
		}
	}
	return ""
}

// WithAllocProfile returns comments with data (an encoded allocation
// profile, as perfassert.Capture records it beside the CPU samples) as
// their allocation profile, replacing any they held. comments is not
// modified.
func WithAllocProfile(comments []string, data []byte) []string {
	kept := slices.DeleteFunc(slices.Clone(comments), func(c string) bool { _, ok := cutAlloc(c); return ok })
	return append(kept, allocPrefix+base64.StdEncoding.EncodeToString(data))
}

// cutAlloc returns the base64 of an allocation comment c.
func cutAlloc(c string) (string, bool) { return cutEither(c, allocPrefix, legacyAllocPrefix) }

// AllocProfile returns the allocation profile WithAllocProfile stored in
// comments, as the bytes it was given. ok is false when comments hold none;
// the error says the one they hold is not what WithAllocProfile writes.
func AllocProfile(comments []string) (data []byte, ok bool, err error) {
	for _, c := range comments {
		enc, found := cutAlloc(c)
		if !found {
			continue
		}
		data, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, false, fmt.Errorf("the profile's allocation record is not base64: %w", err)
		}
		return data, true, nil
	}
	return nil, false, nil
}
