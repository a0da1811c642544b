// Package stats holds the small numeric routines behind the paper's
// sensitivity analyses (docs/specification.md section 4): Wilson score and
// Clopper–Pearson intervals for a cell's proportion, the exact McNemar test
// and the cluster sign-flip randomization test for a paired difference, a
// percentile and a studentized cluster bootstrap that resample servers,
// Holm and Benjamini–Hochberg adjustments for a family of tests,
// Fisher's exact test of two counts, and the unbiased estimator of
// pass^k (consistency across repeated trials); and, for coding reliability, the
// agreement of two coders (raw agreement, Cohen's kappa, Gwet's AC1,
// PABAK).
//
// The package is pure: no I/O, no global state. Randomness comes only from
// an explicit seed (math/rand/v2 PCG). Statistical caveats are returned as
// warnings attached to the value, never as errors or panics.
package stats
