package analysis

// ReferenceFunctions is the implementation Functions replaced, for the
// external tests that compare the two on files the loaders read (package
// loaders imports analysis, so a test of package analysis cannot import
// loaders).
var ReferenceFunctions = referenceFunctions

// LabelSets is labelSets, for the external tests.
func (x *Index) LabelSets() []map[string][]string { return x.labelSets() }
