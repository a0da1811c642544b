package stats_test

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/mcpstress/stress/analysis/stats"
)

// longCoverage runs the coverage simulation over 1,000 studies per design
// (go test ./analysis/stats -run Coverage -stats.coverage -v); without it
// TestCoverage runs 200, enough for its looser bounds.
var longCoverage = flag.Bool("stats.coverage", false, "run the coverage simulation over 1,000 studies per design")

// paperServers are the scenarios per server of the paper's corpus
// (docs/specification.md section 2): three servers with 3 failures, five
// with 2, two with 1.
var paperServers = []int{3, 3, 3, 2, 2, 2, 2, 2, 1, 1}

// design is a simulated study with a known answer: scenarios grouped in
// servers, replicates per scenario, a scenario-level success probability
// drawn from a Beta law with mean p and intra-scenario correlation icc
// (a beta-binomial: icc = 1/(α + β + 1)), and arm A's probability from a
// Beta law with mean p + delta and the same icc, tied to arm B's by a
// Gaussian copula with correlation r (r = 1: a hard scenario is equally
// hard under both arms; r < 1: the effect varies by scenario, so the
// replicates of a scenario lean the same way). The estimands are p (a
// cell's rate) and delta (the paired difference A − B).
type design struct {
	name       string
	servers    []int
	replicates int
	p, delta   float64
	icc, r     float64
}

// betaOf returns the Beta law with mean m and intra-class correlation icc.
func betaOf(m, icc float64) distuv.Beta {
	s := (1 - icc) / icc // α + β
	return distuv.Beta{Alpha: m * s, Beta: (1 - m) * s}
}

// simStudy draws one study: per server, the cell's clusters (rate of
// arm B), the paired-difference clusters, and per scenario the sums
// Σ(aᵢ − bᵢ) and the discordant counts.
func simStudy(d design, rng *rand.Rand) (cell, diff []stats.Cluster, scen []int, ab, ba int) {
	bB, bA := betaOf(d.p, d.icc), betaOf(d.p+d.delta, d.icc)
	bB.Src, bA.Src = rng, rng
	for _, k := range d.servers {
		var cN, dN int
		var cS, dS float64
		for range k {
			z1 := rng.NormFloat64()
			z2 := d.r*z1 + math.Sqrt(1-d.r*d.r)*rng.NormFloat64()
			pb := bB.Quantile(distuv.UnitNormal.CDF(z1))
			pa := bA.Quantile(distuv.UnitNormal.CDF(z2))
			s := 0
			for range d.replicates {
				b := rng.Float64() < pb
				a := rng.Float64() < pa
				cN++
				dN++
				if b {
					cS++
				}
				switch {
				case a && !b:
					s++
					ab++
				case b && !a:
					s--
					ba++
				}
			}
			dS += float64(s)
			scen = append(scen, s)
		}
		cell = append(cell, stats.Cluster{N: cN, Sum: cS})
		diff = append(diff, stats.Cluster{N: dN, Sum: dS})
	}
	return cell, diff, scen, ab, ba
}

// coverage is the outcome of a simulation: per method the share of
// studies whose interval held the estimand, and the sizes of the tests.
type coverage struct {
	studies                 int
	cellPct, cellT          float64 // coverage of the cell's rate: percentile, studentized
	diffPct, diffT          float64 // coverage of the paired difference
	widthPct, widthT        float64 // mean width of the difference's intervals
	rejectMcNemar, rejectSF float64 // share of studies with p < 0.05: McNemar, scenario sign-flip
}

func simulate(d design, studies, b int, seed uint64) coverage {
	rng := rand.New(rand.NewPCG(seed, 7))
	c := coverage{studies: studies}
	in := func(lo, hi, x float64) float64 {
		if lo <= x && x <= hi {
			return 1
		}
		return 0
	}
	for i := range studies {
		cell, diff, scen, ab, ba := simStudy(d, rng)
		o := stats.Options{B: b, Seed: uint64(i) + 1}
		ot := o
		ot.Method = stats.Studentized
		p := stats.ClusterBootstrap(cell, o)
		pt := stats.ClusterBootstrap(cell, ot)
		q := stats.ClusterBootstrap(diff, o)
		qt := stats.ClusterBootstrap(diff, ot)
		c.cellPct += in(p.Lo, p.Hi, d.p)
		c.cellT += in(pt.Lo, pt.Hi, d.p)
		c.diffPct += in(q.Lo, q.Hi, d.delta)
		c.diffT += in(qt.Lo, qt.Hi, d.delta)
		c.widthPct += q.Hi - q.Lo
		c.widthT += qt.Hi - qt.Lo
		if stats.McNemarExact(ab, ba) < 0.05 {
			c.rejectMcNemar++
		}
		if stats.SignFlip(scen, stats.FlipOptions{}).P < 0.05 {
			c.rejectSF++
		}
	}
	n := float64(studies)
	c.cellPct, c.cellT, c.diffPct, c.diffT = c.cellPct/n, c.cellT/n, c.diffPct/n, c.diffT/n
	c.widthPct, c.widthT = c.widthPct/n, c.widthT/n
	c.rejectMcNemar, c.rejectSF = c.rejectMcNemar/n, c.rejectSF/n
	return c
}

// coverageDesigns are the paper's design (10 servers, 21 scenarios, 5
// replicates) with a strong and a weak within-scenario correlation, and
// a null effect (for the tests' sizes) and a 20-point one; an effect
// that varies by scenario (r < 1) is what makes McNemar's test
// anticonservative.
var coverageDesigns = []design{
	{"icc 0.5, r 0.3, null", paperServers, 5, 0.4, 0, 0.5, 0.3},
	{"icc 0.5, r 0.3, +20pp", paperServers, 5, 0.3, 0.2, 0.5, 0.3},
	{"icc 0.5, r 1, null", paperServers, 5, 0.4, 0, 0.5, 1},
	{"icc 0.1, r 0.8, null", paperServers, 5, 0.4, 0, 0.1, 0.8},
	{"icc 0.1, r 0.8, +20pp", paperServers, 5, 0.3, 0.2, 0.1, 0.8},
}

// TestCoverage measures, on simulated studies with a known answer (see
// design), the coverage of the 95% cluster-bootstrap intervals
// (percentile and studentized) of a cell's rate and of a paired
// difference over the paper's 10 servers, and the size (rejection rate at
// 5% under no effect) of McNemar's test and of the scenario-level
// sign-flip test. With -stats.coverage it runs 1,000 studies per design
// with B = 2,000 and prints the table (docs/statistics.md quotes it).
//
// What it asserts, with a Monte Carlo allowance of about 3 standard
// errors: the studentized interval of the difference covers at least
// 90%; the sign-flip test's size is at most 5% plus the allowance (it is
// exact under H₀); and under a strong within-scenario correlation
// McNemar's size exceeds 5% (it treats replicates as independent), the
// reason the sign-flip test stands beside it.
func TestCoverage(t *testing.T) {
	studies, b := 200, 1000
	if *longCoverage {
		studies, b = 1000, 2000
	}
	se := 3 * math.Sqrt(0.05*0.95/float64(studies))
	var out strings.Builder
	fmt.Fprintf(&out, "%d studies per design, B = %d, 95%% intervals:\n", studies, b)
	fmt.Fprintf(&out, "%-24s %9s %9s %9s %9s %9s %9s %9s %9s\n", "design", "cell pct", "cell t", "diff pct", "diff t", "width pct", "width t", "McNemar", "sign-flip")
	for i, d := range coverageDesigns {
		c := simulate(d, studies, b, uint64(i)+1)
		fmt.Fprintf(&out, "%-24s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n", d.name,
			c.cellPct, c.cellT, c.diffPct, c.diffT, c.widthPct, c.widthT, c.rejectMcNemar, c.rejectSF)
		if c.diffT < 0.90 {
			t.Errorf("%s: studentized interval of the difference covers %.3f, want ≥ 0.90", d.name, c.diffT)
		}
		if d.delta == 0 {
			if c.rejectSF > 0.05+se {
				t.Errorf("%s: sign-flip test rejects %.3f under H₀, want ≤ 0.05 + %.3f", d.name, c.rejectSF, se)
			}
			if d.icc >= 0.5 && d.r < 1 && c.rejectMcNemar <= 0.05 {
				t.Errorf("%s: McNemar rejects %.3f under H₀ with correlated replicates, expected > 0.05", d.name, c.rejectMcNemar)
			}
		}
	}
	t.Log("\n" + out.String())
}

// BenchmarkCoverage runs one simulated study of the paper's design per
// iteration (four cluster bootstraps with B = 2,000, McNemar and the
// sign-flip test), the unit of TestCoverage.
func BenchmarkCoverage(b *testing.B) {
	d := coverageDesigns[1]
	for b.Loop() {
		simulate(d, 1, 2000, 1)
	}
}
