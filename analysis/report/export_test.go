package report

// The names this package's external tests use that only the package
// itself does otherwise.

type Doc = document

var PowerFigure = powerFigure
var PowerSection = powerSection
