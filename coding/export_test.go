package coding

// The names this package's external tests use that only the package
// itself does otherwise.

type Result = result

var Fields = fields
var ParseTarget = parseTarget
var TargetString = targetString
