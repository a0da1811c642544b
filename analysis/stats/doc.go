// Package stats holds the small numeric routines behind the paper's
// sensitivity analyses (STUDY.md §4): Wilson score intervals for a cell's
// proportion, the exact McNemar test for a paired difference, and a
// percentile cluster bootstrap that resamples servers; and, for coding
// reliability, the agreement of two coders (raw agreement, Cohen's kappa,
// Gwet's AC1, PABAK).
//
// The package is pure: no I/O, no global state. Randomness comes only from
// an explicit seed (math/rand/v2 PCG). Statistical caveats are returned as
// warnings attached to the value, never as errors or panics.
package stats
