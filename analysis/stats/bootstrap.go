package stats

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// Cluster is the sufficient statistic of one cluster (one server) for a
// ratio-of-sums estimate: N units whose per-unit statistic sums to Sum.
// For a proportion the unit statistic is 0/1, so 0 ≤ Sum ≤ N; for a paired
// difference it is aᵢ − bᵢ ∈ {−1, 0, 1}, so −N ≤ Sum ≤ N.
type Cluster struct {
	N   int     // number of units (decisions) in the cluster, ≥ 0
	Sum float64 // sum of the per-unit statistic over the cluster's units, finite
}

// Default option values, applied by ClusterBootstrap when a field is zero.
const (
	DefaultB    = 10000 // default number of bootstrap resamples
	DefaultConf = 0.95  // default two-sided confidence level
)

// MinClusters is the number of clusters below which ClusterBootstrap warns
// that the percentile interval is unreliable (too few clusters).
const MinClusters = 5

// minTail is the smallest expected number of resamples beyond each interval
// endpoint, (1−Conf)/2·B, before ClusterBootstrap warns that B is too small:
// 25 is B = 1000 at 95 %, the least Efron & Tibshirani (1993) recommend for
// percentile intervals.
const minTail = 25

// Options tunes ClusterBootstrap; the zero value means all defaults.
type Options struct {
	B    int     // number of resamples, ≥ 1; 0 means DefaultB (10000)
	Conf float64 // two-sided confidence level in (0, 1); 0 means DefaultConf (0.95)
	Seed uint64  // PCG seed; resamples are a deterministic function of (clusters, B, Seed)
	// Method is the interval built from the resamples: Percentile (the
	// default, "") or Studentized.
	Method method
}

// method is how ClusterBootstrap turns resamples into an interval.
type method string

// The bootstrap interval methods.
const (
	percentile  method = ""            // percentile interval of θ* (Efron & Tibshirani 1993, ch. 13)
	Studentized method = "studentized" // bootstrap-t with the cluster-robust standard error (ch. 12)
)

// Interval is a bootstrap point estimate with its percentile interval and
// the caveats found while computing it.
type Interval struct {
	Estimate float64   // ratio estimate ΣSum/ΣN on the full sample; NaN if undefined
	Lo, Hi   float64   // percentile interval endpoints; NaN if undefined
	B        int       // number of resamples drawn (after defaults), including skipped ones
	Seed     uint64    // seed used, for the record
	Warnings []Warning // statistical caveats, empty when none; never errors
}

// ClusterBootstrap returns the ratio estimate ΣSum/ΣN over clusters and its
// percentile cluster-bootstrap interval.
//
// Each of B resamples draws len(clusters) clusters uniformly with
// replacement and computes θ* = ΣSum*/ΣN* over the drawn clusters, i.e. the
// units of a cluster are kept together (the "cluster" or "block" bootstrap
// that respects within-cluster correlation; Davison & Hinkley 1997, §3.8,
// strategy 1 with whole clusters resampled). One resample costs
// O(len(clusters)), not O(units). The interval is the percentile interval
// (Efron & Tibshirani 1993, ch. 13):
//
//	[Q(α/2), Q(1−α/2)],  α = 1 − Conf,
//
// where Q is the sample quantile of the θ* values by linear interpolation
// between order statistics, Hyndman & Fan (1996) type 7 (R's quantile
// default): with sorted x₀ ≤ … ≤ x_{m−1} and h = (m−1)·p,
// Q(p) = x_⌊h⌋ + (h − ⌊h⌋)(x_⌊h⌋+1 − x_⌊h⌋).
//
// Warnings (the result is still returned):
//   - fewer than MinClusters clusters ("too few clusters");
//   - every resample equal ("degenerate: all resamples equal");
//   - resamples whose drawn clusters have ΣN* = 0, which are skipped;
//   - B too small for Conf: (1−Conf)/2·B < 25.
//
// Empty input, ΣN = 0, a negative N, a non-finite Sum, B < 0 or Conf
// outside (0, 1) give NaN fields and a warning; ClusterBootstrap never panics.
//
// References:
//   - B. Efron, R. J. Tibshirani (1993). An Introduction to the Bootstrap.
//     Chapman & Hall. Ch. 13 (percentile interval).
//   - A. C. Davison, D. V. Hinkley (1997). Bootstrap Methods and their
//     Application. Cambridge University Press. §3.8 (hierarchical data).
//   - R. J. Hyndman, Y. Fan (1996). Sample quantiles in statistical
//     packages. Am. Stat. 50(4), 361–365.
func ClusterBootstrap(clusters []Cluster, opt Options) Interval {
	return ClusterBootstrapEach([][]Cluster{clusters}, opt)[0]
}

// ClusterBootstrapEach returns ClusterBootstrap(c, opt) for each c of
// columns. When the columns hold as many clusters each (the same clusters
// measured on several statistics), one draw of cluster indices serves them
// all, and each interval is exactly the one ClusterBootstrap gives.
// Note: drawing the indices was about half the time of a bootstrap, and
// an analysis bootstraps every rate of each cell over the same clusters.
func ClusterBootstrapEach(columns [][]Cluster, opt Options) []Interval {
	opt = opt.withDefaults()
	out := make([]Interval, len(columns))
	var todo []int // the columns to resample
	for i, clusters := range columns {
		if resample := bootstrapStart(&out[i], clusters, opt); resample {
			todo = append(todo, i)
		}
	}
	thetas, skipped := resampleEach(columns, todo, opt.B, opt.Seed)
	for j, i := range todo {
		bootstrapEnd(&out[i], thetas[j], skipped[j], opt)
	}
	return out
}

// warn adds a warning to iv.
func (iv *Interval) warn(kind WarningKind, format string, args ...any) {
	iv.Warnings = append(iv.Warnings, Warning{kind, fmt.Sprintf(format, args...)})
}

// bootstrapStart sets iv to the estimate over clusters and the caveats
// found before resampling, and reports whether the percentile interval
// is to be drawn (the studentized one is made here).
func bootstrapStart(iv *Interval, clusters []Cluster, opt Options) (resample bool) {
	nan := math.NaN()
	*iv = Interval{Estimate: nan, Lo: nan, Hi: nan, B: opt.B, Seed: opt.Seed}
	if len(clusters) == 0 {
		iv.warn(Undefined, "no clusters: estimate undefined")
		return false
	}
	total, ok := totals(clusters, iv.warn)
	if !ok {
		return false
	}
	if total.N == 0 {
		iv.warn(Undefined, "total N = 0 over %d clusters: estimate undefined", len(clusters))
		return false
	}
	iv.Estimate = total.Sum / float64(total.N)

	if len(clusters) < MinClusters {
		iv.warn(FewClusters, "too few clusters (%d < %d): percentile interval unreliable", len(clusters), MinClusters)
	}
	if opt.B < 0 {
		iv.warn(Undefined, "invalid B = %d: no interval", opt.B)
		return false
	}
	if !(opt.Conf > 0 && opt.Conf < 1) {
		iv.warn(Undefined, "invalid Conf = %v (want 0 < Conf < 1): no interval", opt.Conf)
		return false
	}
	if tail := (1 - opt.Conf) / 2 * float64(opt.B); tail < minTail {
		iv.warn(SmallB, "B = %d too small for Conf = %v: %.3g expected resamples beyond each endpoint (want ≥ %d)",
			opt.B, opt.Conf, tail, minTail)
	}

	if opt.Method == Studentized {
		studentized(iv, clusters, total, opt, iv.warn)
		return false
	}
	if opt.Method != percentile {
		iv.warn(Undefined, "unknown bootstrap method %q: no interval", opt.Method)
		return false
	}
	return true
}

// bootstrapEnd sets iv's percentile interval from the resamples theta.
func bootstrapEnd(iv *Interval, theta []float64, skipped int, opt Options) {
	alpha := 1 - opt.Conf
	if skipped > 0 {
		iv.warn(Skipped, "%d of %d resamples had total N = 0 and were skipped", skipped, opt.B)
	}
	if len(theta) == 0 {
		iv.warn(Undefined, "no usable resamples: no interval")
		return
	}
	slices.Sort(theta)
	if theta[0] == theta[len(theta)-1] {
		iv.warn(Degenerate, "degenerate: all resamples equal (%v)", theta[0])
	}
	iv.Lo = quantile7(theta, alpha/2)
	iv.Hi = quantile7(theta, 1-alpha/2)
}

// resampleEach returns clusterResamples of each column named by todo:
// with one draw of indices for all when there are several and they hold
// as many clusters, the same replicates in the same order.
//
// A column needs no draws of its own when it equals one before it (its
// resamples are that column's) or when every cluster has N > 0 and
// Sum = 0, or every cluster Sum = N: every resample's θ* is then exactly
// 0 (or 1; the sums of whole numbers below 2⁵³ are exact), whatever the
// draws. The draws of the others are the same without it.
// Note: a cell's rates over a study of offline baselines are all 0 or
// all 1 on every server; on 1,000 servers their draws were 30% of
// stress analyze's time.
func resampleEach(columns [][]Cluster, todo []int, b int, seed uint64) (thetas [][]float64, skipped []int) {
	thetas, skipped = make([][]float64, len(todo)), make([]int, len(todo))
	var draw, drawn []int   // the columns of todo to draw, and where in todo
	copies := map[int]int{} // a column of todo → the earlier one it equals
	for j, i := range todo {
		if x := slices.IndexFunc(todo[:j], func(e int) bool { return slices.Equal(columns[e], columns[i]) }); x >= 0 {
			copies[j] = x
			continue
		}
		if r, ok := fixedRatio(columns[i]); ok && b > 0 {
			thetas[j] = make([]float64, b)
			for x := range thetas[j] {
				thetas[j][x] = r
			}
			continue
		}
		draw, drawn = append(draw, i), append(drawn, j)
	}
	th, sk := resampleAll(columns, draw, b, seed)
	for x, j := range drawn {
		thetas[j], skipped[j] = th[x], sk[x]
	}
	for j, x := range copies {
		thetas[j], skipped[j] = slices.Clone(thetas[x]), skipped[x]
	}
	return thetas, skipped
}

// fixedRatio reports whether every cluster has N > 0 and Sum = 0, or
// every one Sum = N, and that ratio, which every resample then gives.
func fixedRatio(clusters []Cluster) (r float64, ok bool) {
	zero, one := true, true
	for _, c := range clusters {
		if c.N <= 0 {
			return 0, false
		}
		zero, one = zero && c.Sum == 0, one && c.Sum == float64(c.N)
	}
	switch {
	case zero:
		return 0, true
	case one:
		return 1, true
	}
	return 0, false
}

// resampleAll is resampleEach drawing every column of todo.
func resampleAll(columns [][]Cluster, todo []int, b int, seed uint64) (thetas [][]float64, skipped []int) {
	thetas, skipped = make([][]float64, len(todo)), make([]int, len(todo))
	if len(todo) == 0 {
		return thetas, skipped
	}
	k := len(columns[todo[0]])
	shared := len(todo) > 1
	for _, i := range todo {
		shared = shared && len(columns[i]) == k
	}
	if !shared {
		for j, i := range todo {
			thetas[j], skipped[j] = clusterResamples(make([]float64, 0, b), columns[i], b, seed)
		}
		return thetas, skipped
	}
	c := len(todo)
	flat := make([]Cluster, k*c) // cluster j of every column side by side
	for j, i := range todo {
		for x, cl := range columns[i] {
			flat[x*c+j] = cl
		}
		thetas[j] = make([]float64, 0, b)
	}
	n, s := make([]int, c), make([]float64, c)
	d := newDrawer(seed, k)
	for range b {
		clear(n)
		clear(s)
		for range k {
			row := flat[int(d.next())*c:][:c]
			for j, cl := range row {
				n[j] += cl.N
				s[j] += cl.Sum
			}
		}
		for j := range c {
			if n[j] == 0 {
				skipped[j]++
				continue
			}
			thetas[j] = append(thetas[j], s[j]/float64(n[j]))
		}
	}
	return thetas, skipped
}

// clusterResamples appends to dst the bootstrap replicates θ* = ΣSum*/ΣN*
// of b resamples of clusters (each draws len(clusters) clusters uniformly
// with replacement) and returns the extended slice, in draw order, together
// with the number of resamples skipped because their ΣN* was 0.
//
// It is the resampling step of ClusterBootstrap, exposed for diagnostics
// (plotting the bootstrap distribution, convergence tests). The clusters are
// not validated. The draws are a deterministic function of (clusters, b,
// seed): indices are drawn from rand.NewPCG(seed, pcgStream) with Lemire's
// (2019) unbiased multiply-shift reduction.
//
// Reference: D. Lemire (2019). Fast random integer generation in an
// interval. ACM TOMACS 29(1), 3.
//
// Note: the reduction is implemented here on top of PCG.Uint64 rather than
// taken from rand.Rand.IntN, so the replicates depend only on the PCG output
// stream, which math/rand/v2 specifies, and not on the standard library's
// choice of bounded-integer algorithm.
func clusterResamples(dst []float64, clusters []Cluster, b int, seed uint64) (theta []float64, skipped int) {
	k := len(clusters)
	if k == 0 || b <= 0 {
		return dst, 0
	}
	dst = slices.Grow(dst, b)
	d := newDrawer(seed, k)
	for range b {
		var n int
		var s float64
		for range k {
			c := clusters[d.next()]
			n += c.N
			s += c.Sum
		}
		if n == 0 {
			skipped++
			continue
		}
		dst = append(dst, s/float64(n))
	}
	return dst, skipped
}

// pcgStream is the fixed second PCG seed word; Options.Seed is the first.
const pcgStream = 0x6d63707374726573 // "mcpstres"

// drawer draws cluster indices uniformly from [0, k), k > 0, from
// rand.NewPCG(seed, pcgStream) with Lemire's multiply-shift reduction.
type drawer struct {
	src       *rand.PCG
	k, thresh uint64
}

func newDrawer(seed uint64, k int) drawer {
	u := uint64(k)
	return drawer{src: rand.NewPCG(seed, pcgStream), k: u, thresh: -u % u} // 2⁶⁴ mod k: low products below it are rejected
}

// next returns the next index.
func (d drawer) next() uint64 {
	hi, lo := bits.Mul64(d.src.Uint64(), d.k)
	for lo < d.thresh {
		hi, lo = bits.Mul64(d.src.Uint64(), d.k)
	}
	return hi
}

// sumOf returns the clusters' total N and Sum.
func sumOf(clusters []Cluster) (n int, s float64) {
	for _, c := range clusters {
		n += c.N
		s += c.Sum
	}
	return n, s
}

// withDefaults returns o with zero fields replaced by their defaults.
func (o Options) withDefaults() Options {
	o.B = cmp.Or(o.B, DefaultB)
	o.Conf = cmp.Or(o.Conf, DefaultConf)
	return o
}

// totals returns the summed cluster, or ok = false after warning about the
// first invalid cluster.
func totals(clusters []Cluster, warn func(WarningKind, string, ...any)) (total Cluster, ok bool) {
	for i, c := range clusters {
		if c.N < 0 {
			warn(Undefined, "invalid cluster %d: N = %d < 0", i, c.N)
			return Cluster{}, false
		}
		if math.IsNaN(c.Sum) || math.IsInf(c.Sum, 0) {
			warn(Undefined, "invalid cluster %d: Sum = %v", i, c.Sum)
			return Cluster{}, false
		}
		total.N += c.N
		total.Sum += c.Sum
	}
	return total, true
}

// quantile7 returns the Hyndman–Fan type-7 quantile at p ∈ [0, 1] of the
// sorted, non-empty x.
func quantile7(x []float64, p float64) float64 {
	h := float64(len(x)-1) * p
	i := int(math.Floor(h))
	if i >= len(x)-1 {
		return x[len(x)-1]
	}
	return x[i] + (h-float64(i))*(x[i+1]-x[i])
}

// clusterSE returns the cluster-robust (CR1) standard error of the ratio
// estimate θ = ΣSum/ΣN over k clusters, from its linearization:
//
//	SE² = k/(k − 1) · Σ_c (Sum_c − θ·N_c)² / (ΣN)²,
//
// the sandwich variance of a ratio (Cochran 1977, §6.4; Cameron & Miller
// 2015, §VI.B), NaN when k < 2 or ΣN = 0. The clusters are not validated.
//
// References:
//   - W. G. Cochran (1977). Sampling Techniques, 3rd ed. Wiley. §6.4.
//   - A. C. Cameron, D. L. Miller (2015). A practitioner's guide to
//     cluster-robust inference. J. Human Resources 50(2), 317–372.
func clusterSE(clusters []Cluster) float64 {
	k := len(clusters)
	n, s := sumOf(clusters)
	if k < 2 || n == 0 {
		return math.NaN()
	}
	theta := s / float64(n)
	v := 0.0
	for _, c := range clusters {
		r := c.Sum - theta*float64(c.N)
		v += r * r
	}
	return math.Sqrt(float64(k) / float64(k-1) * v / (float64(n) * float64(n)))
}

// studentized sets iv's interval to the bootstrap-t interval
//
//	[θ̂ − t*₁₋α/₂·SE, θ̂ − t*α/₂·SE],  t* = (θ* − θ̂)/SE*,
//
// SE = clusterSE of the sample and SE* of each resample, t*_p the type-7
// quantiles (Efron & Tibshirani 1993, ch. 12; Davison & Hinkley 1997,
// §5.2.1). Resamples with ΣN* = 0 or SE* = 0 (every drawn cluster has the
// same ratio) have no t* and are skipped, with a Skipped warning.
//
// Note: the studentized interval is second-order accurate where the
// percentile one is first-order, and it widens by the resamples' own
// spread, which matters most with few clusters; TestCoverage and
// BenchmarkCoverage measure both on designs with a known answer. It can
// extend beyond the statistic's range (a proportion's [0, 1]): callers
// clip it.
func studentized(iv *Interval, clusters []Cluster, total Cluster, opt Options, warn func(WarningKind, string, ...any)) {
	se := clusterSE(clusters)
	if math.IsNaN(se) {
		warn(Undefined, "%d cluster(s): no cluster-robust standard error, no studentized interval", len(clusters))
		return
	}
	theta := iv.Estimate
	if se == 0 {
		warn(Degenerate, "degenerate: every cluster has the same ratio (%v), standard error 0", theta)
		iv.Lo, iv.Hi = theta, theta
		return
	}
	d := newDrawer(opt.Seed, len(clusters))
	drawn := make([]Cluster, len(clusters))
	ts := make([]float64, 0, opt.B)
	skipped := 0
	for range opt.B {
		for i := range drawn {
			drawn[i] = clusters[d.next()]
		}
		n, s := sumOf(drawn)
		if n == 0 {
			skipped++
			continue
		}
		seStar := clusterSE(drawn)
		if !(seStar > 0) {
			skipped++
			continue
		}
		ts = append(ts, (s/float64(n)-theta)/seStar)
	}
	if skipped > 0 {
		warn(Skipped, "%d of %d resamples had total N = 0 or standard error 0 and were skipped", skipped, opt.B)
	}
	if len(ts) == 0 {
		warn(Undefined, "no usable resamples: no interval")
		return
	}
	slices.Sort(ts)
	alpha := 1 - opt.Conf
	iv.Lo = theta - quantile7(ts, 1-alpha/2)*se
	iv.Hi = theta - quantile7(ts, alpha/2)*se
}
