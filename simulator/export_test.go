package simulator

// MaxArgumentBytes is maxArgumentBytes, for the external tests.
const MaxArgumentBytes = maxArgumentBytes
