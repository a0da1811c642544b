package openai

// The names this package's external tests use that only the package
// itself does otherwise.

const Backend = backend
const UnreachableHint = unreachableHint
