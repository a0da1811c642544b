package stats

import "math/bits"

// exactLimit bounds the binomial coefficients a float64 holds exactly.
const exactLimit = 1 << 53

// passHat calls each with pass^k for k = 1..kmax (1 ≤ kmax ≤ n, 0 ≤ c ≤
// n): the exact quotient of C(c, k) and C(n, k) while C(n, k) < 2⁵³,
// then the running product.
//
// pass^k, the probability that k independent trials of one task all
// succeed, is estimated without bias from n trials of the task of which
// c succeeded:
//
//	pass^k = C(c, k) / C(n, k),   0 when c < k,
//
// the share of the C(n, k) subsets of k of the n trials in which every
// trial succeeded (Yao et al. 2024, τ-bench, the pass^k metric). Under n
// independent Bernoulli(p) trials its expectation is p^k: it is the
// U-statistic of the kernel "all k succeeded". The result is in [0, 1];
// pass^1 is c/n.
//
// While C(n, k) is below 2⁵³ both binomial coefficients are computed
// exactly in integers and the result is their correctly rounded
// quotient (exact for every n ≤ 56, and for any n at small k); beyond,
// it continues with the product Π (c − i)/(n − i), about one rounding
// per further factor (relative error below k·2⁻⁵²).
//
// Reference: S. Yao, N. Shinn, P. Razavi, K. Narasimhan (2024).
// τ-bench: A Benchmark for Tool-Agent-User Interaction in Real-World
// Domains. arXiv:2406.12045.
func passHat(n, c, kmax int, each func(k int, p float64)) {
	cn, cc := uint64(1), uint64(1) // C(n, k − 1), C(c, k − 1)
	exact := true
	p := 1.0
	for k := 1; k <= kmax; k++ {
		num, den := float64(c-k+1), float64(n-k+1)
		if exact {
			// C(m, k) = C(m, k − 1)·(m − k + 1)/k, an exact division.
			hi, lo := bits.Mul64(cn, uint64(n-k+1))
			if hi != 0 || lo/uint64(k) >= exactLimit {
				exact = false
			} else {
				cn = lo / uint64(k)
				if k > c {
					cc = 0
				} else {
					cc = cc * uint64(c-k+1) / uint64(k) // cc ≤ cn: no overflow
				}
				p = float64(cc) / float64(cn)
			}
		}
		if !exact {
			if num <= 0 {
				p = 0
			} else {
				p *= num / den
			}
		}
		each(k, p)
	}
}

// Trials are one task's repeated trials (one scenario's replicates in a
// cell): N run, C of them succeeded (0 ≤ C ≤ N).
type Trials struct {
	N int // trials run, ≥ 0
	C int // trials that succeeded, 0 ≤ C ≤ N
}

// PassKClusters returns, for each k of ks, the per-cluster sufficient
// statistics of pass^k over tasks (for ClusterBootstrap): perK[i][j] has
// N = the tasks of cluster j with at least ks[i] trials and Sum = their
// passHatK(N, C, ks[i]), so that ΣSum/ΣN is the mean of pass^k over
// those tasks, each task weighing the same whatever its number of
// trials. dropped[i] counts the tasks left out at ks[i]: fewer than
// ks[i] trials, or counts out of range (C < 0 or C > N); a k below 1
// leaves every task out. Time O(Σ min(N, max ks)) over the tasks,
// memory O(len(ks) × len(clusters) + max ks).
//
// Note: a task with fewer than k trials has no unbiased estimate of
// pass^k, so it is left out rather than estimated from its own fewer
// trials; the caller says so (a Dropped warning on the value).
func PassKClusters(clusters [][]Trials, ks []int) (perK [][]Cluster, dropped []int) {
	perK = make([][]Cluster, len(ks))
	for i := range perK {
		perK[i] = make([]Cluster, len(clusters))
	}
	dropped = make([]int, len(ks))
	kmax := 0
	for _, k := range ks {
		kmax = max(kmax, k)
	}
	at := make([][]int, kmax+1) // k → its indices in ks
	for i, k := range ks {
		if k >= 1 {
			at[k] = append(at[k], i)
		}
	}
	for j, tasks := range clusters {
		for _, t := range tasks {
			n := 0
			if t.N >= 1 && t.C >= 0 && t.C <= t.N {
				n = min(t.N, kmax)
				passHat(t.N, t.C, n, func(k int, p float64) {
					for _, i := range at[k] {
						perK[i][j].N++
						perK[i][j].Sum += p
					}
				})
			}
			for i, k := range ks {
				if k < 1 || k > n {
					dropped[i]++
				}
			}
		}
	}
	return perK, dropped
}
