package budget

// Assertion is assertion for the external tests: the selector and
// options of the limits check a budget limit makes.
var Assertion = assertion
