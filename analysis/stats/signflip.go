package stats

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// maxExactWork bounds the exact sign-flip distribution: SignFlip computes
// it exactly when clusters × (2·Σ|dᵢ| + 1) is at most this many steps,
// and by Monte Carlo otherwise.
const maxExactWork = 50_000_000

// maxExactSums bounds the exact distribution's table: 2·Σ|dᵢ| + 1 sums
// (two tables of float64, 64 MiB in all).
const maxExactSums = 1 << 22

// defaultDraws is the number of Monte Carlo sign vectors SignFlip draws
// when the exact distribution is too large and Draws is 0.
const defaultDraws = 100_000

// FlipOptions tunes SignFlip; the zero value means the defaults.
type FlipOptions struct {
	Draws int    // Monte Carlo sign vectors when the exact distribution is too large; 0 means defaultDraws
	Seed  uint64 // PCG seed of the Monte Carlo draws
	// Level is the significance level the few-clusters caveat is checked
	// against (the smallest attainable p-value exceeds it); 0 means 0.05.
	Level float64
}

// flip is the result of a sign-flip randomization test.
type flip struct {
	P           float64   // two-sided p-value in (0, 1]; NaN when undefined
	Clusters    int       // clusters given
	Informative int       // clusters with dᵢ ≠ 0 (the others cannot change the statistic)
	MinP        float64   // smallest attainable p-value, 2^(1−Informative) (exact); 1 with none
	Exact       bool      // true: full randomization distribution; false: Monte Carlo
	Draws       int       // Monte Carlo sign vectors drawn (0 when exact)
	Warnings    []Warning // caveats: few clusters, invalid input
}

// SignFlip is the cluster-level randomization test of a paired difference:
// d holds, per cluster (a scenario or a server), the sum over its matched
// pairs of aⱼ − bⱼ, with aⱼ, bⱼ ∈ {0, 1}. Under H₀ (the two arms are
// exchangeable within each pair, hence the sign of each cluster's sum is
// symmetric whatever the correlation inside the cluster), every sign
// vector ε ∈ {−1, 1}ᵏ is equally likely, and the statistic T = Σ εᵢdᵢ has
// the randomization distribution of Fisher (1935, §21) applied to
// clusters. The two-sided p-value is P(|T*| ≥ |T_obs|) (Good 2005, §3.3).
//
// Exact: since every dᵢ is an integer, the distribution of T* is the
// convolution of the k two-point laws {−dᵢ, +dᵢ}, computed by dynamic
// programming over the integer sums in O(k·Σ|dᵢ|); it is used whenever
// that is at most maxExactWork steps (and the table of sums at most 2²²
// entries), which covers any study of this project's size. Otherwise opt.Draws sign vectors are drawn and
// p = (1 + #{|T*| ≥ |T_obs|}) / (1 + Draws) (Phipson & Smyth 2010), a
// valid p-value.
//
// Note: unlike McNemar's test, which treats every pair as independent,
// the test is valid when the replicates of a scenario (or the scenarios of
// a server) are correlated; the price is resolution: with m informative
// clusters no p-value is below 2^(1−m), and a Coarse warning says so
// when that floor exceeds opt.Level. When every cluster holds one pair it
// is McNemar's exact test (the discordant pairs are the informative
// clusters; TestSignFlipIsMcNemar).
//
// References:
//   - R. A. Fisher (1935). The Design of Experiments, §21.
//   - P. Good (2005). Permutation, Parametric and Bootstrap Tests of
//     Hypotheses, 3rd ed. Springer. §3.3 (one-sample and paired tests).
//   - B. Phipson, G. K. Smyth (2010). Permutation p-values should never be
//     zero. Stat. Appl. Genet. Mol. Biol. 9(1), 39.
//
// Invalid input (none of d, Draws < 0, Level outside (0, 1)) gives P = NaN
// and an Undefined warning; SignFlip never panics.
func SignFlip(d []int, opt FlipOptions) flip {
	f := flip{P: math.NaN(), MinP: math.NaN(), Clusters: len(d)}
	warn := func(kind WarningKind, format string, args ...any) {
		f.Warnings = append(f.Warnings, Warning{kind, fmt.Sprintf(format, args...)})
	}
	opt.Draws = cmp.Or(opt.Draws, defaultDraws)
	opt.Level = cmp.Or(opt.Level, 0.05)
	if len(d) == 0 {
		warn(Undefined, "no clusters: no sign-flip test")
		return f
	}
	if opt.Draws < 0 || !(opt.Level > 0 && opt.Level < 1) {
		warn(Undefined, "invalid options (Draws = %d, Level = %v): no sign-flip test", opt.Draws, opt.Level)
		return f
	}
	var total, obs int64
	var nz []int64
	for _, x := range d {
		obs += int64(x)
		if x != 0 {
			a := int64(max(x, -x))
			nz = append(nz, a)
			total += a
		}
	}
	f.Informative = len(nz)
	f.MinP = math.Ldexp(1, 1-len(nz))
	if len(nz) == 0 {
		f.MinP = 1
	}
	if f.MinP > opt.Level {
		warn(Coarse, "%d of %d clusters differ: the sign-flip test cannot reach p < %s (smallest attainable p = %.3g)",
			len(nz), len(d), FormatLevel(opt.Level), f.MinP)
	}
	obs = max(obs, -obs)
	if len(nz) == 0 {
		f.P, f.Exact = 1, true
		return f
	}
	if work := float64(len(nz)) * float64(2*total+1); work <= maxExactWork && 2*total+1 <= maxExactSums {
		f.P, f.Exact = flipExact(nz, total, obs), true
		return f
	}
	src := rand.NewPCG(opt.Seed, pcgStream)
	// Each draw takes ⌈len(nz)/64⌉ words of the stream, bit j of word w
	// the sign of nz[64w+j] (set: +). The sum is taken four signs at a
	// time: tab[16g+m] is the signed sum of nz[4g…4g+3] under the signs
	// of nibble m. Integer sums: the same statistic, a quarter of the
	// steps.
	groups := (len(nz) + 3) / 4
	tab := make([]int64, 16*groups)
	for g := range groups {
		for m := range 16 {
			var t int64
			for j := range 4 {
				if i := 4*g + j; i < len(nz) {
					if m>>j&1 != 0 {
						t += nz[i]
					} else {
						t -= nz[i]
					}
				}
			}
			tab[16*g+m] = t
		}
	}
	// rest[w] is Σ|dᵢ| over the clusters after word w's: once the sum of
	// the first words is known, |T*| lies within rest of it, and when
	// that settles whether |T*| ≥ |T_obs| the draw's other words are
	// drawn (the next draw starts where it would have) but not summed.
	// An observed statistic at or near its largest attainable value (an
	// arm better on every cluster) is missed by almost every draw after
	// its first word: 0.29 s to 0.04 s for 16,667 clusters
	// (BenchmarkSignFlipOneWay). The check is made after every eighth
	// word only, and skip is not inlined: checked after every word, or
	// with the skipping in the loop, a draw that nothing settles early
	// (BenchmarkSignFlipMonteCarlo) took 10 to 15% longer.
	words := (groups + 15) / 16
	rest := make([]int64, words)
	for w := words - 2; w >= 0; w-- {
		rest[w] = rest[w+1]
		for _, a := range nz[64*(w+1) : min(64*(w+2), len(nz))] {
			rest[w] += a
		}
	}
	hits := 0
	for range opt.Draws {
		var t int64
		for g := 0; g < groups; {
			word := src.Uint64()
			for end := min(g+16, groups); g < end; g++ {
				t += tab[16*g+int(word&15)]
				word >>= 4
			}
			if g&(16*8-1) == 16 && g < groups { // after words 0, 8, 16, …
				w := g/16 - 1
				if a := max(t, -t); a+rest[w] < obs || a-rest[w] >= obs {
					skip(src, words-1-w)
					t = a
					break
				}
			}
		}
		if max(t, -t) >= obs {
			hits++
		}
	}
	f.Draws = opt.Draws
	f.P = float64(1+hits) / float64(1+opt.Draws)
	return f
}

// skip draws n words of src, unused.
//
//go:noinline
func skip(src *rand.PCG, n int) {
	for range n {
		src.Uint64()
	}
}

// flipExact returns P(|Σ εᵢaᵢ| ≥ obs) for independent fair signs εᵢ, with
// aᵢ > 0 and total = Σaᵢ, by convolution over the sums −total…total.
func flipExact(a []int64, total, obs int64) float64 {
	off := total
	p := make([]float64, 2*total+1)
	q := make([]float64, 2*total+1)
	p[off] = 1
	reach := int64(0) // p is zero outside [off−reach, off+reach]
	for _, x := range a {
		lo, hi := off-reach-x, off+reach+x
		for s := lo; s <= hi; s++ {
			q[s] = 0
		}
		for s := off - reach; s <= off+reach; s++ {
			if v := p[s]; v != 0 {
				h := v / 2
				q[s-x] += h
				q[s+x] += h
			}
		}
		reach += x
		p, q = q, p
	}
	// Note: the two tails are summed from the outside in, so the small
	// probabilities are added first.
	sum := 0.0
	for s := total; s >= obs; s-- {
		sum += p[off+s]
		if s != 0 {
			sum += p[off-s]
		}
	}
	return min(sum, 1)
}

// FormatLevel formats a significance level for people: the shortest
// decimal of its value rounded to 12 significant digits, so that a level
// computed as 1 − 0.95 (0.050000000000000044 in float64) reads 0.05.
func FormatLevel(level float64) string {
	return strconv.FormatFloat(level, 'g', 12, 64)
}
