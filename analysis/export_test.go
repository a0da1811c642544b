package analysis

// The names this package's external tests use that only the package
// itself does otherwise.

const PaperCaveat = paperCaveat
const Selective = selective

type AgainstOptions = againstOptions
type Coverage = coverage
type PaperMatch = paperMatch
type PaperModel = paperModel
type PowerCurve = powerCurve
type PowerPoint = curvePoint

var Paper = loadPaper
var RateKeys = rateKeys
var WritePairs = writePairs
