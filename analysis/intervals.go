package analysis

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/mcpstress/stress/internal/parallel"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"

	"github.com/mcpstress/stress/analysis/stats"
)

// DefaultSeed is the bootstrap seed when none is given; every result
// records the seed it used.
const DefaultSeed = 1

// Options tunes the sensitivity analysis; the zero value means defaults.
type Options struct {
	B    int     // bootstrap resamples, ≥ 1; 0 means stats.DefaultB (10,000)
	Seed uint64  // bootstrap seed; 0 means DefaultSeed
	Conf float64 // two-sided confidence level in (0, 1); 0 means 0.95
	// Pairs are the paired comparisons asked for, after the predeclared
	// ones (docs/specification.md section 4), in every arm that has both
	// conditions.
	Pairs []PairSpec
	// NoPredeclared drops the predeclared comparisons
	// (docs/specification.md section 4.6).
	NoPredeclared bool
	// Declared are comparisons the study's manifest declared before the
	// run (its comparisons field): computed after Predeclared and marked
	// predeclared.
	Declared []PairSpec
	// Interval is the per-cell interval: IntervalWilson (the default, "")
	// or IntervalClopperPearson.
	Interval string
	// Family selects the pairs whose p-values are adjusted together:
	// FamilyAll (the default, ""), FamilyPredeclared or FamilyRequested.
	Family string
}

// The per-cell intervals Options.Interval may name.
const (
	IntervalWilson         = "wilson"
	IntervalClopperPearson = "clopper-pearson"
)

// The families Options.Family may name.
const (
	FamilyAll         = "all"         // the predeclared and the requested pairs
	FamilyPredeclared = "predeclared" // the predeclared pairs alone
	FamilyRequested   = "requested"   // the requested (-pair) pairs alone
)

func (o Options) withDefaults() Options {
	o.B = cmp.Or(o.B, stats.DefaultB)
	o.Seed = cmp.Or(o.Seed, DefaultSeed)
	o.Conf = cmp.Or(o.Conf, stats.DefaultConf)
	o.Interval = cmp.Or(o.Interval, IntervalWilson)
	o.Family = cmp.Or(o.Family, FamilyAll)
	return o
}

func (o Options) check() error {
	if o.B < 1 {
		return fmt.Errorf("bootstrap resamples B = %d, want ≥ 1", o.B)
	}
	if !(o.Conf > 0 && o.Conf < 1) {
		return fmt.Errorf("confidence level %v, want 0 < conf < 1", o.Conf)
	}
	if o.Interval != IntervalWilson && o.Interval != IntervalClopperPearson {
		return fmt.Errorf("interval %q, want %s or %s", o.Interval, IntervalWilson, IntervalClopperPearson)
	}
	if o.Family != FamilyAll && o.Family != FamilyPredeclared && o.Family != FamilyRequested {
		return fmt.Errorf("family %q, want %s, %s or %s", o.Family, FamilyAll, FamilyPredeclared, FamilyRequested)
	}
	return nil
}

func (o Options) boot() stats.Options { return stats.Options{B: o.B, Conf: o.Conf, Seed: o.Seed} }

// level is the significance level of the tests, 1 − Conf rounded to 12
// decimals: 0.05, not float64's 0.050000000000000044, for Conf 0.95.
func (o Options) level() float64 { return math.Round((1-o.Conf)*1e12) / 1e12 }

// bootstrapInfo records how the bootstrap intervals were drawn.
type bootstrapInfo struct {
	B        int     `json:"b"`        // resamples per interval
	Seed     uint64  `json:"seed"`     // the same seed for every interval
	Conf     float64 `json:"conf"`     // two-sided confidence level
	Cluster  string  `json:"cluster"`  // the resampled unit: "server"
	Clusters int     `json:"clusters"` // servers in the bundle
}

// Analysis is the sensitivity analysis of a bundle: every cell's rates with
// their intervals, and the paired comparisons.
type Analysis struct {
	Bootstrap bootstrapInfo `json:"bootstrap"`
	// Interval is the per-cell interval: IntervalWilson or
	// IntervalClopperPearson (the cells' "wilson" or "clopper_pearson").
	Interval string      `json:"interval"`
	Cells    []CellStats `json:"cells"`
	// Coverage lists the bundle's conditions that do not express every
	// one of its scenarios (absent when each expresses every one, or
	// the bundle does not record it).
	Coverage []coverage `json:"coverage,omitempty"`
	Family   familyInfo `json:"family"`
	Pairs    []Pair     `json:"pairs"`
	// Caveats are statements about the design that qualify every interval
	// and test (few clusters), computed from the bundle.
	Caveats []string `json:"caveats,omitempty"`
}

// familyInfo declares the family of pairs whose p-values are adjusted
// together for multiplicity.
type familyInfo struct {
	Declared string `json:"declared"` // FamilyAll, FamilyPredeclared or FamilyRequested
	Size     int    `json:"size"`     // pairs in the family with a p-value (m)
	// Untestable counts the pairs of the declared family left out of it
	// because no scenario differs (Adjusted.Untestable).
	Untestable int      `json:"untestable"`
	Test       string   `json:"test"`    // the p-value adjusted
	Methods    []string `json:"methods"` // holm, bh
}

// familyTest names the p-value the family adjusts.
const familyTest = "sign_flip_scenario"

// Note: the adjusted p-value is the scenario-level sign-flip test's, the
// one test here that is valid when the replicates of a scenario are
// correlated; Holm needs no assumption about the dependence between the
// family's tests, Benjamini–Hochberg assumes positive dependence (PRDS),
// plausible for contrasts on the same decisions.

// Note: a pair of the declared family whose scenarios never differ (no
// informative scenario) is left out of it: its sign-flip p-value is 1 by
// construction, no test at all, and as a member it would only raise m and
// every other pair's adjusted p-value (Holm's m·p₍₁₎). It is marked
// Untestable and listed under the table.

// adjust sets the Holm and BH p-values of the pairs in the family.
func adjust(pairs []Pair, family string) familyInfo {
	fi := familyInfo{Declared: family, Test: familyTest, Methods: []string{"holm", "bh"}}
	var idx []int
	var p []float64
	for i := range pairs {
		pr := &pairs[i]
		pr.Holm, pr.BH = Num(math.NaN()), Num(math.NaN())
		in := family == FamilyAll || family == FamilyPredeclared && pr.Predeclared || family == FamilyRequested && !pr.Predeclared
		defined := !math.IsNaN(float64(pr.FlipScenario.P))
		pr.Untestable = in && defined && pr.FlipScenario.Informative == 0
		pr.InFamily = in && !pr.Untestable
		switch {
		case pr.Untestable:
			fi.Untestable++
		case in && defined:
			idx, p = append(idx, i), append(p, float64(pr.FlipScenario.P))
		}
	}
	h, b := stats.Holm(p), stats.BH(p)
	for j, i := range idx {
		pairs[i].Holm, pairs[i].BH = Num(h[j]), Num(b[j])
	}
	fi.Size = len(idx)
	return fi
}

// clusterCaveat is the statement, for k servers (the bootstrap's
// clusters), of how far the cluster-robust methods can be trusted; ""
// from 30 servers on.
//
// Note: the threshold and the figures come from TestCoverage (1,000
// simulated studies of the paper's design, 10 servers): the percentile
// interval covered 89–92% for a nominal 95%, the studentized one 93.5–96%;
// Cameron & Miller (2015, §VI) put the point where cluster-robust
// inference starts to be reliable at 20–50 clusters.
func clusterCaveat(k int) string {
	switch {
	case k == 0:
		return ""
	case k < stats.MinClusters:
		return fmt.Sprintf("Only %d server(s): the cluster bootstrap cannot be trusted at all and the server-level sign-flip test cannot reach p < 0.05 with fewer than 6 servers that differ; read the exact counts and the scenario-level tests.", k)
	case k < 30:
		return fmt.Sprintf("Only %d servers (clusters): percentile cluster-bootstrap intervals undercover (about 89–92%% for a nominal 95%% at 10 servers in simulation); the studentized interval (boot-t) is closer to nominal (93.5–96%%). McNemar's test treats the replicates of a scenario as independent, which they are not (they are repeated judgments of the same failure): read the sign-flip tests beside it.", k)
	}
	return ""
}

// CellStats is a cell's exact counts with its rates (count / N, Strict /
// Cover, and for a cell with lab outcomes recovered and harm out of LabN
// and the means of calls and lab_ms) and their 95% intervals (no Wilson
// interval for a mean).
type CellStats struct {
	results.Cell
	Rates RateSet[Num] `json:"rates"` // point estimates; null when the denominator is 0
	// CI holds the per-cell intervals of the proportions: Wilson score
	// intervals (no continuity correction) or Clopper–Pearson, as Method
	// says; in JSON "wilson" or "clopper_pearson".
	CI        RateSet[Bounds] `json:"-"`
	Method    string          `json:"-"` // IntervalWilson or IntervalClopperPearson
	Bootstrap cellBootstrap   `json:"bootstrap"`
	// PassK is the cell's consistency across replicates, pass^k for k =
	// 1 up to its most replicates of a scenario, per column of
	// PassKColumns it has, with bootstrap intervals; in JSON "pass_k".
	PassK PassKSet `json:"-"`
}

// ciKey is the JSON key of the per-cell intervals.
func (cs CellStats) ciKey() string {
	if cs.Method == IntervalClopperPearson {
		return "clopper_pearson"
	}
	return "wilson"
}

// MarshalJSON implements json.Marshaler: the cell's fields (as
// results.Cell prints them), then "rates", "wilson", "bootstrap" and
// "pass_k".
func (cs CellStats) MarshalJSON() ([]byte, error) {
	out, err := json.Marshal(cs.Cell)
	if err != nil {
		return nil, err
	}
	out = out[:len(out)-1]
	for _, f := range []struct {
		key string
		v   any
	}{{"rates", cs.Rates}, {cs.ciKey(), cs.CI}, {"bootstrap", cs.Bootstrap}, {"pass_k", cs.PassK}} {
		b, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		out = append(append(out, `,"`+f.key+`":`...), b...)
	}
	return append(out, '}'), nil
}

// cellBootstrap holds a cell's percentile cluster-bootstrap intervals
// (servers resampled with replacement) and their caveats per rate.
type cellBootstrap struct {
	B    int    `json:"b"`
	Seed uint64 `json:"seed"`
	RateSet[Bounds]
	Warnings map[string][]stats.Warning `json:"warnings,omitempty"` // rate key -> caveats
}

// MarshalJSON implements json.Marshaler: {"b","seed", the rate keys, then
// "warnings" when there are any}.
func (cb cellBootstrap) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(struct {
		B    int    `json:"b"`
		Seed uint64 `json:"seed"`
	}{cb.B, cb.Seed})
	if err != nil {
		return nil, err
	}
	rates, err := cb.RateSet.MarshalJSON()
	if err != nil {
		return nil, err
	}
	out := append(head[:len(head)-1], ',')
	out = append(out, rates[1:len(rates)-1]...)
	if len(cb.Warnings) > 0 {
		w, err := json.Marshal(cb.Warnings)
		if err != nil {
			return nil, err
		}
		out = append(append(out, `,"warnings":`...), w...)
	}
	return append(out, '}'), nil
}

// Clusters returns the per-server sufficient statistics of rate key (one of
// rateKeys) in a cell, for servers with at least one counted decision in
// it, sorted by server name: N decisions and Sum = the count (for
// Selective, N = Cover and Sum = Strict; for a lab column, N = the
// decisions with lab outcomes and Sum = the count or the lab sum, so that
// ΣSum/ΣN is its proportion or mean).
func (a *Accumulator) Clusters(cell int, key string) []stats.Cluster {
	var out []stats.Cluster
	ps := a.perServer[cell]
	col := simulator.ColumnIndex(key)
	lab := isLab(col)
	for _, si := range a.serverOrder() {
		if int(si) >= len(ps) || ps[si].n == 0 {
			continue
		}
		sc := ps[si]
		switch {
		case key == selective:
			out = append(out, stats.Cluster{N: sc.col[simulator.Cover], Sum: float64(sc.col[simulator.Strict])})
		case lab:
			out = append(out, stats.Cluster{N: sc.lab, Sum: float64(sc.col[col])})
		case col >= 0:
			out = append(out, stats.Cluster{N: sc.n, Sum: float64(sc.col[col])})
		}
	}
	return out
}

// Analyze computes the rates, Wilson (or Clopper–Pearson) and
// cluster-bootstrap intervals of every cell and the paired comparisons,
// with their p-values adjusted over the declared family. It fails only on
// bad options or a pair that names levels the bundle lacks; statistical
// caveats are warnings on the values.
func (a *Accumulator) Analyze(ctx context.Context, opt Options) (*Analysis, error) {
	opt = opt.withDefaults()
	if err := opt.check(); err != nil {
		return nil, err
	}
	an := &Analysis{Bootstrap: bootstrapInfo{B: opt.B, Seed: opt.Seed, Conf: opt.Conf, Cluster: "server", Clusters: len(a.servers.names)},
		Interval: opt.Interval}
	// The cells' intervals and the pairs are computed side by side.
	cells := a.Cells()
	an.Cells = make([]CellStats, len(cells))
	var pairs []Pair
	var err error
	parallel.For(len(cells)+1, func(i int) {
		if i == len(cells) {
			pairs, err = a.pairs(ctx, opt)
			return
		}
		if ctx.Err() == nil {
			an.Cells[i] = a.cellStats(i, cells[i], opt)
		}
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	an.Pairs = pairs
	an.Coverage = a.coverage()
	an.Family = adjust(an.Pairs, opt.Family)
	if c := clusterCaveat(len(a.servers.names)); c != "" {
		an.Caveats = append(an.Caveats, c)
	}
	return an, nil
}

func (a *Accumulator) cellStats(i int, c results.Cell, opt Options) CellStats {
	cs := CellStats{Cell: c, Method: opt.Interval, Bootstrap: cellBootstrap{B: opt.B, Seed: opt.Seed}}
	var keys []string
	var clusters [][]stats.Cluster
	for _, key := range rateKeys {
		if !hasRate(&c, key) {
			continue
		}
		k, n := rateCounts(&c, key)
		est := math.NaN()
		if n > 0 {
			est = float64(k) / float64(n)
		}
		cs.Rates.Set(key, Num(est))
		if !isSum(simulator.ColumnIndex(key)) {
			lo, hi := stats.Wilson(k, n, opt.Conf)
			if opt.Interval == IntervalClopperPearson {
				lo, hi = stats.ClopperPearson(k, n, opt.Conf)
			}
			cs.CI.Set(key, Bounds{lo, hi})
		}
		keys, clusters = append(keys, key), append(clusters, a.Clusters(i, key))
	}
	// pass^k's intervals are drawn with the rates' (the same servers).
	pk := a.passKInput(i)
	ivs := stats.ClusterBootstrapEach(append(clusters, pk.all()...), opt.boot())
	cs.PassK = pk.finish(ivs[len(keys):])
	for j, iv := range ivs[:len(keys)] {
		cs.Bootstrap.Set(keys[j], Bounds{iv.Lo, iv.Hi})
		if len(iv.Warnings) > 0 {
			if cs.Bootstrap.Warnings == nil {
				cs.Bootstrap.Warnings = map[string][]stats.Warning{}
			}
			cs.Bootstrap.Warnings[keys[j]] = iv.Warnings
		}
	}
	return cs
}
