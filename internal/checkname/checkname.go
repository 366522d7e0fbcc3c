// Package checkname names the perfassert assertion that bounds a limits
// quantity, as a limits.Result names its check and perfassert's failure
// text does. It takes the quantity's words (limits.Quantity's values) so
// that limits and perfassert share it without exporting it.
package checkname

// Of is the assertion that bounds quantity ("self time" → "MaxSelfTime"),
// or "Check" for a quantity it does not know.
func Of(quantity string) string {
	switch quantity {
	case "self time":
		return "MaxSelfTime"
	case "total time":
		return "MaxTotalTime"
	case "self share":
		return "MaxSelfShare"
	case "total share":
		return "MaxTotalShare"
	case "self allocations":
		return "MaxAllocs"
	case "total allocations":
		return "MaxTotalAllocs"
	case "self allocated bytes":
		return "MaxAllocBytes"
	case "total allocated bytes":
		return "MaxTotalAllocBytes"
	case "self instructions":
		return "MaxSelfInstructions"
	case "total instructions":
		return "MaxTotalInstructions"
	}
	return "Check"
}
