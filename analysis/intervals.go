package analysis

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/mcpstress/stress/results"

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
	// ones (STUDY.md section 4), in every arm that has both conditions.
	Pairs []PairSpec
	// NoPredeclared drops the predeclared comparisons.
	NoPredeclared bool
}

func (o Options) withDefaults() Options {
	if o.B == 0 {
		o.B = stats.DefaultB
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.Conf == 0 {
		o.Conf = stats.DefaultConf
	}
	return o
}

func (o Options) check() error {
	if o.B < 1 {
		return fmt.Errorf("bootstrap resamples B = %d, want ≥ 1", o.B)
	}
	if !(o.Conf > 0 && o.Conf < 1) {
		return fmt.Errorf("confidence level %v, want 0 < conf < 1", o.Conf)
	}
	return nil
}

func (o Options) boot() stats.Options { return stats.Options{B: o.B, Conf: o.Conf, Seed: o.Seed} }

// BootstrapInfo records how the bootstrap intervals were drawn.
type BootstrapInfo struct {
	B        int     `json:"b"`        // resamples per interval
	Seed     uint64  `json:"seed"`     // the same seed for every interval
	Conf     float64 `json:"conf"`     // two-sided confidence level
	Cluster  string  `json:"cluster"`  // the resampled unit: "server"
	Clusters int     `json:"clusters"` // servers in the bundle
}

// Analysis is the sensitivity analysis of a bundle: every cell's rates with
// their intervals, and the paired comparisons.
type Analysis struct {
	Bootstrap BootstrapInfo `json:"bootstrap"`
	Cells     []CellStats   `json:"cells"`
	Pairs     []Pair        `json:"pairs"`
}

// CellStats is a cell's exact counts with its rates (count / N, Strict /
// Cover, and for a cell with lab outcomes recovered and harm out of LabN
// and the means of calls and lab_ms) and their 95% intervals (no Wilson
// interval for a mean).
type CellStats struct {
	results.Cell
	Rates     RateSet[Num]    `json:"rates"`  // point estimates; null when the denominator is 0
	Wilson    RateSet[Bounds] `json:"wilson"` // Wilson score intervals, no continuity correction
	Bootstrap CellBootstrap   `json:"bootstrap"`
}

// MarshalJSON implements json.Marshaler: the cell's fields (as
// results.Cell prints them), then "rates", "wilson" and "bootstrap".
func (cs CellStats) MarshalJSON() ([]byte, error) {
	cell, err := json.Marshal(cs.Cell)
	if err != nil {
		return nil, err
	}
	rest, err := json.Marshal(struct {
		Rates     RateSet[Num]    `json:"rates"`
		Wilson    RateSet[Bounds] `json:"wilson"`
		Bootstrap CellBootstrap   `json:"bootstrap"`
	}{cs.Rates, cs.Wilson, cs.Bootstrap})
	if err != nil {
		return nil, err
	}
	return append(append(cell[:len(cell)-1], ','), rest[1:]...), nil
}

// CellBootstrap holds a cell's percentile cluster-bootstrap intervals
// (servers resampled with replacement) and their caveats per rate.
type CellBootstrap struct {
	B    int    `json:"b"`
	Seed uint64 `json:"seed"`
	RateSet[Bounds]
	Warnings map[string][]stats.Warning `json:"warnings,omitempty"` // rate key -> caveats
}

// MarshalJSON implements json.Marshaler: {"b","seed", the rate keys, then
// "warnings" when there are any}.
func (cb CellBootstrap) MarshalJSON() ([]byte, error) {
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
// RateKeys) in a cell, for servers with at least one counted decision in
// it, sorted by server name: N decisions and Sum = the count (for
// Selective, N = Cover and Sum = Strict; for a lab column, N = the
// decisions with lab outcomes and Sum = the count or the lab sum, so that
// ΣSum/ΣN is its proportion or mean).
func (a *Accumulator) Clusters(cell int, key string) []stats.Cluster {
	var out []stats.Cluster
	ps := a.perServer[cell]
	col := Column(key).index()
	lab := Column(key).Lab()
	for _, si := range a.serverOrder() {
		if int(si) >= len(ps) || ps[si].n == 0 {
			continue
		}
		sc := ps[si]
		switch {
		case key == Selective:
			out = append(out, stats.Cluster{N: sc.col[Cover.index()], Sum: float64(sc.col[Strict.index()])})
		case lab:
			out = append(out, stats.Cluster{N: sc.lab, Sum: float64(sc.col[col])})
		case col >= 0:
			out = append(out, stats.Cluster{N: sc.n, Sum: float64(sc.col[col])})
		}
	}
	return out
}

// Analyze computes the rates, Wilson and cluster-bootstrap intervals of
// every cell and the paired comparisons. It fails only on bad options or
// a pair that names a condition no arm has; statistical caveats are
// warnings on the values.
func (a *Accumulator) Analyze(opt Options) (*Analysis, error) {
	opt = opt.withDefaults()
	if err := opt.check(); err != nil {
		return nil, err
	}
	an := &Analysis{Bootstrap: BootstrapInfo{B: opt.B, Seed: opt.Seed, Conf: opt.Conf, Cluster: "server", Clusters: len(a.servers.names)}}
	for i, c := range a.Cells() {
		an.Cells = append(an.Cells, a.cellStats(i, c, opt))
	}
	pairs, err := a.pairs(opt)
	if err != nil {
		return nil, err
	}
	an.Pairs = pairs
	return an, nil
}

func (a *Accumulator) cellStats(i int, c results.Cell, opt Options) CellStats {
	cs := CellStats{Cell: c, Bootstrap: CellBootstrap{B: opt.B, Seed: opt.Seed}}
	for _, key := range RateKeys {
		if !hasRate(&c, key) {
			continue
		}
		k, n := rateCounts(&c, key)
		est := math.NaN()
		if n > 0 {
			est = float64(k) / float64(n)
		}
		cs.Rates.Set(key, Num(est))
		if !Column(key).Sum() {
			lo, hi := stats.Wilson(k, n, opt.Conf)
			cs.Wilson.Set(key, Bounds{lo, hi})
		}
		iv := stats.ClusterBootstrap(a.Clusters(i, key), opt.boot())
		cs.Bootstrap.Set(key, Bounds{iv.Lo, iv.Hi})
		if len(iv.Warnings) > 0 {
			if cs.Bootstrap.Warnings == nil {
				cs.Bootstrap.Warnings = map[string][]stats.Warning{}
			}
			cs.Bootstrap.Warnings[key] = iv.Warnings
		}
	}
	return cs
}
