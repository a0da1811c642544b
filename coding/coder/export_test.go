package coder

// The names this package's external tests use that only the package
// itself does otherwise.

var ParseAnswer = parseAnswer
