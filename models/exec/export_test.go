package exec

// The names this package's external tests use that only the package
// itself does otherwise.

const Backend = backend
const KindExit = kindExit
const KindMalformed = kindMalformed
const KindProgram = kindProgram
const KindProtocol = kindProtocol
const KindStart = kindStart
const KindTimeout = kindTimeout
const KindTooLarge = kindTooLarge

type Model = model

var New = newModel
