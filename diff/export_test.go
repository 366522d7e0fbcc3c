package diff

// Exported for the external tests only.

var CleanPath = cleanPath

const BaseLabel = baseLabel

func (r *Report) ShownValues(row Row) (float64, float64) { return r.shownValues(row) }

func (r *Report) FormatMetric(v float64) string { return r.formatMetric(v) }
