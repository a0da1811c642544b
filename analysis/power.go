package analysis

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/mcpstress/stress/analysis/stats"
)

// PowerOptions is a design question: the difference to detect and the
// grid of designs to try; the zero values of the numbers mean defaults.
type PowerOptions struct {
	Diff       float64 // target difference A − B, a proportion in (−1, 1), not 0
	Scenarios  []int   // scenarios per study; nil means DefaultPowerScenarios
	Replicates []int   // replicates per scenario; nil means DefaultPowerReplicates
	Servers    []int   // servers the scenarios are spread over; nil means DefaultPowerServers
	Studies    int     // simulated studies per design, ≥ 1; 0 means DefaultPowerStudies
	Level      float64 // two-sided significance level; 0 means 0.05
	Seed       uint64  // PCG seed; 0 means DefaultSeed
	// ServerShare is the share of the scenario-level latent variance that
	// servers hold (0: the scenarios of a server are independent), in [0, 1).
	ServerShare float64
}

// Default power grid and number of simulated studies per design.
var (
	DefaultPowerScenarios  = []int{21, 42, 84}
	DefaultPowerReplicates = []int{1, 3, 5, 10}
	DefaultPowerServers    = []int{10, 20}
)

// DefaultPowerStudies is the number of simulated studies per design.
const DefaultPowerStudies = 1000

// maxPowerWork bounds a power question's size: designs × studies ×
// decisions per study.
const maxPowerWork = 2_000_000_000

// PowerContrast is the data-generating model of one contrast: arm B's
// mean rate, the intra-scenario correlation of a decision's outcome (the
// beta-binomial ICC: the share of the outcome's variance that lies
// between scenarios), and the correlation r of a scenario's latent
// difficulty under the two arms (1: the effect is the same on every
// scenario; lower: it varies by scenario).
type PowerContrast struct {
	Name    string  `json:"name"`
	Base    float64 `json:"base"`     // arm B's rate, in (0, 1)
	ICC     float64 `json:"icc"`      // in (0, 1)
	ArmCorr float64 `json:"arm_corr"` // in [0, 1]
	// Source says where the parameters come from: "assumed", or the
	// pilot bundle's pair they were estimated from.
	Source string `json:"source"`
	// Clamped lists the pilot's estimates that fell outside the model's
	// range, or were undefined, and the values used instead.
	Clamped []PowerClamp `json:"clamped,omitempty"`
}

// PowerClamp is one pilot estimate replaced by a value in the model's
// range (PilotContrasts).
type PowerClamp struct {
	Field    string  `json:"field"`    // "base", "icc" or "arm_corr", as in PowerContrast's JSON
	Estimate string  `json:"estimate"` // what the pilot gave: "0/105", "-0.0312", "undefined (no variance)"
	Value    float64 `json:"value"`    // what the model uses instead
}

// ClampNote says which of c's pilot estimates were clamped, and to what,
// or returns "" when none was; a pilot whose rate of B is 0 or 1 is
// called degenerate.
func (c PowerContrast) ClampNote() string {
	if len(c.Clamped) == 0 {
		return ""
	}
	var parts []string
	degenerate := false
	for _, k := range c.Clamped {
		verb := "clamped to"
		if strings.HasPrefix(k.Estimate, "undefined") {
			verb = "set to"
		}
		switch k.Field {
		case "base":
			degenerate = true
			parts = append(parts, fmt.Sprintf("rate of B %s %s %s%%", k.Estimate, verb, Pct(k.Value)))
		case "icc":
			parts = append(parts, fmt.Sprintf("intra-scenario correlation %s %s %.3g", k.Estimate, verb, k.Value))
		case "arm_corr":
			parts = append(parts, fmt.Sprintf("arm correlation %s %s %.3g", k.Estimate, verb, k.Value))
		}
	}
	note := "pilot contrast " + c.Name + ": " + strings.Join(parts, ", ")
	if degenerate {
		note += " (a degenerate pilot)"
	}
	return note
}

// curvePoint is the estimated power of one design.
type curvePoint struct {
	Scenarios  int `json:"scenarios"`
	Replicates int `json:"replicates"`
	Servers    int `json:"servers"`
	Decisions  int `json:"decisions"` // per arm: scenarios × replicates
	// Power is the share of simulated studies in which the scenario-level
	// sign-flip test rejected at the level; PowerServer the server-level
	// one's; PowerMcNemar McNemar's (which overstates power when the
	// effect varies by scenario: its size exceeds the level).
	Power        float64 `json:"power"`
	PowerServer  float64 `json:"power_server"`
	PowerMcNemar float64 `json:"power_mcnemar"`
	SE           float64 `json:"se"` // Monte Carlo standard error of Power
}

// powerCurve is one contrast's power over the grid.
type powerCurve struct {
	PowerContrast
	Points []curvePoint `json:"points"`
}

// Power is the answer to a design question.
type Power struct {
	Diff        float64      `json:"diff"`
	Level       float64      `json:"level"`
	Studies     int          `json:"studies"`
	Seed        uint64       `json:"seed"`
	ServerShare float64      `json:"server_share"`
	Curves      []powerCurve `json:"contrasts"`
}

func (o PowerOptions) withDefaults() PowerOptions {
	if o.Scenarios == nil {
		o.Scenarios = DefaultPowerScenarios
	}
	if o.Replicates == nil {
		o.Replicates = DefaultPowerReplicates
	}
	if o.Servers == nil {
		o.Servers = DefaultPowerServers
	}
	o.Studies = cmp.Or(o.Studies, DefaultPowerStudies)
	o.Level = cmp.Or(o.Level, 0.05)
	o.Seed = cmp.Or(o.Seed, DefaultSeed)
	return o
}

// check names the first bad option.
func (o PowerOptions) check(contrasts []PowerContrast) error {
	if !(o.Diff > -1 && o.Diff < 1) || o.Diff == 0 {
		return fmt.Errorf("difference %v, want a proportion in (−1, 1) other than 0", o.Diff)
	}
	if o.Studies < 1 {
		return fmt.Errorf("studies %d, want ≥ 1", o.Studies)
	}
	if !(o.Level > 0 && o.Level < 1) {
		return fmt.Errorf("level %v, want 0 < level < 1", o.Level)
	}
	if !(o.ServerShare >= 0 && o.ServerShare < 1) {
		return fmt.Errorf("server share %v, want 0 ≤ share < 1", o.ServerShare)
	}
	for _, g := range []struct {
		name string
		v    []int
	}{{"scenarios", o.Scenarios}, {"replicates", o.Replicates}, {"servers", o.Servers}} {
		if len(g.v) == 0 {
			return fmt.Errorf("%s: empty grid", g.name)
		}
		for _, x := range g.v {
			if x < 1 || x > 100000 {
				return fmt.Errorf("%s: %d, want 1 to 100000", g.name, x)
			}
		}
	}
	work := 0.0
	for _, s := range o.Scenarios {
		for _, r := range o.Replicates {
			work += float64(s*r) * float64(len(o.Servers))
		}
	}
	if work*float64(o.Studies)*float64(len(contrasts)) > maxPowerWork {
		return fmt.Errorf("%.3g simulated decisions (grid × studies × contrasts), more than %d: shrink the grid or -studies", work*float64(o.Studies)*float64(len(contrasts)), maxPowerWork)
	}
	for _, c := range contrasts {
		if !(c.Base > 0 && c.Base < 1) {
			return fmt.Errorf("contrast %s: rate %v, want 0 < rate < 1", c.Name, c.Base)
		}
		if t := c.Base + o.Diff; !(t > 0 && t < 1) {
			return fmt.Errorf("contrast %s: rate %v + difference %v = %v is not a rate in (0, 1)", c.Name, c.Base, o.Diff, t)
		}
		if !(c.ICC > 0 && c.ICC < 1) {
			return fmt.Errorf("contrast %s: intra-scenario correlation %v, want 0 < icc < 1", c.Name, c.ICC)
		}
		if !(c.ArmCorr >= 0 && c.ArmCorr <= 1) {
			return fmt.Errorf("contrast %s: arm correlation %v, want 0 ≤ r ≤ 1", c.Name, c.ArmCorr)
		}
	}
	return nil
}

// EstimatePower estimates by simulation the power of each contrast to
// detect opt.Diff over the grid of designs.
//
// The model of one simulated study: S scenarios spread round-robin over
// V servers; each scenario has a latent difficulty z ~ N(0, 1) (with
// ServerShare of its variance shared by the scenarios of a server), and
// arm B's success probability on it is the Beta quantile at Φ(z) of the
// Beta law with mean Base and intra-class correlation ICC (a beta-binomial:
// α + β = 1/ICC − 1); arm A's is the quantile at Φ(z′) of the Beta law with
// mean Base + Diff and the same ICC, z′ = r·z + sqrt(1 − r²)·e (a Gaussian
// copula), so that the expected difference is exactly Diff. Each of R
// replicates draws the two arms' outcomes independently given the
// scenario. The study is analysed as a bundle is: the scenario-level and
// server-level sign-flip tests (stats.SignFlip) and McNemar's test at
// Level.
//
// Note: the test that decides is the scenario-level sign-flip test, the
// one that stays valid with correlated replicates; its power is capped
// by its resolution (with m scenarios that differ no p is below
// 2^(1−m)), which is why more replicates cannot stand in for more
// scenarios.
func EstimatePower(ctx context.Context, contrasts []PowerContrast, opt PowerOptions) (*Power, error) {
	opt = opt.withDefaults()
	if len(contrasts) == 0 {
		return nil, fmt.Errorf("no contrast to estimate the power of")
	}
	if err := opt.check(contrasts); err != nil {
		return nil, err
	}
	pw := &Power{Diff: opt.Diff, Level: opt.Level, Studies: opt.Studies, Seed: opt.Seed, ServerShare: opt.ServerShare}
	for ci, c := range contrasts {
		curve := powerCurve{PowerContrast: c}
		size := 1/c.ICC - 1
		ta := c.Base + opt.Diff
		qB := newLatentQuantile(distuv.Beta{Alpha: c.Base * size, Beta: (1 - c.Base) * size})
		qA := newLatentQuantile(distuv.Beta{Alpha: ta * size, Beta: (1 - ta) * size})
		for _, s := range opt.Scenarios {
			for _, r := range opt.Replicates {
				for _, v := range opt.Servers {
					seed := opt.Seed ^ uint64(ci+1)*0x9e3779b97f4a7c15
					rng := rand.New(rand.NewPCG(seed, uint64(s)<<40|uint64(r)<<20|uint64(v)))
					pt, err := powerPoint(ctx, c, opt, qA, qB, s, r, v, rng)
					if err != nil {
						return nil, err
					}
					curve.Points = append(curve.Points, pt)
				}
			}
		}
		pw.Curves = append(pw.Curves, curve)
	}
	return pw, nil
}

// powerPoint simulates opt.Studies studies of one design, arm A's and
// B's scenario probabilities given by qA and qB.
func powerPoint(ctx context.Context, c PowerContrast, opt PowerOptions, qA, qB latentQuantile, s, r, v int, rng *rand.Rand) (curvePoint, error) {
	pt := curvePoint{Scenarios: s, Replicates: r, Servers: v, Decisions: s * r}
	dScen := make([]int, s)
	dServ := make([]int, v)
	serverZ := make([]float64, v)
	fo := stats.FlipOptions{Level: opt.Level, Seed: opt.Seed}
	for k := range opt.Studies {
		if k%64 == 0 && ctx.Err() != nil {
			return pt, ctx.Err()
		}
		for i := range serverZ {
			serverZ[i] = rng.NormFloat64()
			dServ[i] = 0
		}
		ab, ba := 0, 0
		for i := range s {
			z := math.Sqrt(opt.ServerShare)*serverZ[i%v] + math.Sqrt(1-opt.ServerShare)*rng.NormFloat64()
			z2 := c.ArmCorr*z + math.Sqrt(1-c.ArmCorr*c.ArmCorr)*rng.NormFloat64()
			pb, pa := qB.at(z), qA.at(z2)
			d := 0
			for range r {
				a, b := rng.Float64() < pa, rng.Float64() < pb
				switch {
				case a && !b:
					d++
					ab++
				case b && !a:
					d--
					ba++
				}
			}
			dScen[i] = d
			dServ[i%v] += d
		}
		if stats.SignFlip(dScen, fo).P < opt.Level {
			pt.Power++
		}
		if stats.SignFlip(dServ[:min(v, s)], fo).P < opt.Level {
			pt.PowerServer++
		}
		if stats.McNemarExact(ab, ba) < opt.Level {
			pt.PowerMcNemar++
		}
	}
	n := float64(opt.Studies)
	pt.Power, pt.PowerServer, pt.PowerMcNemar = pt.Power/n, pt.PowerServer/n, pt.PowerMcNemar/n
	pt.SE = math.Sqrt(pt.Power * (1 - pt.Power) / n)
	return pt, nil
}

// latentQuantile tabulates z ↦ F⁻¹(Φ(z)) of a Beta law F on a grid of
// latent values z, for linear interpolation.
//
// Note: the Beta quantile (an inverse incomplete beta) costs about 5 µs
// and took 90% of a power question's time; the table, 1,089 quantiles per
// law and contrast, is exact at its nodes, and linear interpolation with
// step 1/64 changes a scenario's probability by far less than the
// Monte Carlo error of a power estimate.
type latentQuantile struct{ q []float64 }

const (
	latentMax  = 8.5      // |z| beyond it is clamped
	latentStep = 1.0 / 64 // grid step
)

func newLatentQuantile(b distuv.Beta) latentQuantile {
	n := int(2*latentMax/latentStep) + 1
	q := make([]float64, n)
	for i := range q {
		q[i] = b.Quantile(distuv.UnitNormal.CDF(-latentMax + float64(i)*latentStep))
	}
	return latentQuantile{q}
}

// at returns the interpolated quantile at latent value z.
func (l latentQuantile) at(z float64) float64 {
	x := (min(max(z, -latentMax), latentMax) + latentMax) / latentStep
	i := int(x)
	if i >= len(l.q)-1 {
		return l.q[len(l.q)-1]
	}
	f := x - float64(i)
	return l.q[i] + f*(l.q[i+1]-l.q[i])
}

// Feasible splits contrasts into those whose rate of B plus diff is a
// rate in (0, 1), which EstimatePower accepts, and the names of the
// others (a pilot cell at 99% cannot rise by 15 points).
func Feasible(contrasts []PowerContrast, diff float64) (ok []PowerContrast, skipped []string) {
	for _, c := range contrasts {
		if t := c.Base + diff; t > 0 && t < 1 {
			ok = append(ok, c)
		} else {
			skipped = append(skipped, fmt.Sprintf("%s (rate of B %s%%)", c.Name, Pct(c.Base)))
		}
	}
	return ok, skipped
}

// PilotContrasts estimates the data-generating model of every pair of
// the analysis (the predeclared and requested contrasts in each arm) from
// its decisions: Base = CountB/N; ICC, the ANOVA estimator of the
// intra-class correlation of a binary outcome (Fleiss 1981, §13.1;
// Ridout, Demétrio & Firth 1999), over the scenarios of both arms,
// averaged; ArmCorr, the correlation of the two arms' per-scenario rates
// across scenarios. Each is clamped to the model's range (Base and ICC to
// [0.01, 0.99], ArmCorr to [0, 1]; ICC 0.01 and ArmCorr 1 when
// undefined), and each clamp is recorded in Clamped. Pairs without
// decisions are skipped.
//
// Note: a pilot's ICC and arm correlation are noisy with 21 scenarios;
// the power they give is a rough guide, and -icc/-arm-corr override them.
func PilotContrasts(an *Analysis) []PowerContrast {
	var out []PowerContrast
	for _, p := range an.Pairs {
		if p.N == 0 || len(p.scen) == 0 {
			continue
		}
		c := PowerContrast{Name: fmt.Sprintf("%s %s − %s (%s)", p.Within(), p.A, p.B, p.Column.Column().Label),
			Base: clampRate(float64(p.CountB) / float64(p.N)), Source: "pilot " + p.Spec + " in " + p.Within()}
		if c.Base != float64(p.CountB)/float64(p.N) {
			c.Clamped = append(c.Clamped, PowerClamp{Field: "base", Estimate: fmt.Sprintf("%d/%d", p.CountB, p.N), Value: c.Base})
		}
		var n, ka, kb []float64 // per scenario: pairs, and outcomes under A and B
		for _, s := range p.scen {
			if s.n > 0 {
				n, ka, kb = append(n, float64(s.n)), append(ka, float64(s.a)), append(kb, float64(s.b))
			}
		}
		ia, ib := iccANOVA(ka, n), iccANOVA(kb, n)
		switch {
		case math.IsNaN(ia) && math.IsNaN(ib):
			c.ICC = 0.01
			c.Clamped = append(c.Clamped, PowerClamp{Field: "icc", Estimate: "undefined (no variance)", Value: c.ICC})
		case math.IsNaN(ia):
			c.ICC = ib
		case math.IsNaN(ib):
			c.ICC = ia
		default:
			c.ICC = (ia + ib) / 2
		}
		if icc := min(max(c.ICC, 0.01), 0.99); icc != c.ICC {
			c.Clamped = append(c.Clamped, PowerClamp{Field: "icc", Estimate: fmt.Sprintf("%.3g", c.ICC), Value: icc})
			c.ICC = icc
		}
		c.ArmCorr = 1
		switch r := corrRates(ka, kb, n); {
		case math.IsNaN(r):
			c.Clamped = append(c.Clamped, PowerClamp{Field: "arm_corr", Estimate: "undefined (no variance)", Value: 1})
		case r < 0 || r > 1:
			c.ArmCorr = min(max(r, 0), 1)
			c.Clamped = append(c.Clamped, PowerClamp{Field: "arm_corr", Estimate: fmt.Sprintf("%.3g", r), Value: c.ArmCorr})
		default:
			c.ArmCorr = r
		}
		out = append(out, c)
	}
	return out
}

func clampRate(x float64) float64 { return min(max(x, 0.01), 0.99) }

// iccANOVA is the ANOVA estimator of the intra-class correlation of
// binary outcomes, k[i] successes of n[i] in group i:
// (MSB − MSW) / (MSB + (n₀ − 1)·MSW), n₀ = (N − Σnᵢ²/N)/(g − 1); NaN with
// fewer than 2 groups, no within-group degrees of freedom or no variance.
func iccANOVA(k, n []float64) float64 {
	g := float64(len(n))
	var N, K, sq float64
	for i := range n {
		N, K, sq = N+n[i], K+k[i], sq+n[i]*n[i]
	}
	if g < 2 || N-g <= 0 {
		return math.NaN()
	}
	p := K / N
	var ssb, ssw float64
	for i := range n {
		pi := k[i] / n[i]
		ssb += n[i] * (pi - p) * (pi - p)
		ssw += n[i] * pi * (1 - pi)
	}
	msb, msw := ssb/(g-1), ssw/(N-g)
	n0 := (N - sq/N) / (g - 1)
	den := msb + (n0-1)*msw
	if den == 0 {
		return math.NaN()
	}
	return (msb - msw) / den
}

// corrRates is the Pearson correlation of the rates a[i]/n[i] and
// b[i]/n[i] (gonum's stat.Correlation); NaN when either has no variance,
// that is, the same rate in every group.
//
// Note: the equality test is exact, since equal fractions divide to the
// same float; a mean of the rates may round away from them (21 rates of
// 1/10), which left a tiny variance and a correlation of 0 in place of NaN.
func corrRates(a, b, n []float64) float64 {
	if len(n) < 2 {
		return math.NaN()
	}
	ra, rb := make([]float64, len(n)), make([]float64, len(n))
	for i := range n {
		ra[i], rb[i] = a[i]/n[i], b[i]/n[i]
	}
	if slices.Min(ra) == slices.Max(ra) || slices.Min(rb) == slices.Max(rb) {
		return math.NaN()
	}
	return stat.Correlation(ra, rb, nil)
}

// PowerHeader is the header of the power table.
var PowerHeader = []string{"contrast", "scenarios", "replicates", "servers", "decisions/arm", "power (scenario flip)", "± MC se", "power (server flip)", "power (McNemar)"}

// PowerRows are the rows of the power table, one per (contrast, design).
func PowerRows(pw *Power) [][]string {
	var rows [][]string
	for _, c := range pw.Curves {
		for _, p := range c.Points {
			rows = append(rows, []string{c.Name, fmt.Sprint(p.Scenarios), fmt.Sprint(p.Replicates), fmt.Sprint(p.Servers), fmt.Sprint(p.Decisions),
				Pct(p.Power), Pct(p.SE), Pct(p.PowerServer), Pct(p.PowerMcNemar)})
		}
	}
	return rows
}

// PowerText is the explanation printed above the power table.
func PowerText(pw *Power) string {
	return fmt.Sprintf("Power (%%) to detect a difference of %s percentage points at the two-sided %g%% level, "+
		"estimated from %d simulated studies per design (seed %d). The deciding test is the scenario-level sign-flip "+
		"test, valid with correlated replicates; the server-level one and McNemar's (which treats replicates as "+
		"independent and so overstates power when the effect varies by scenario) are shown for comparison. "+
		"Scenarios are spread round-robin over the servers (server share of the scenario variance %g).",
		SignedPct(pw.Diff), 100*pw.Level, pw.Studies, pw.Seed, pw.ServerShare)
}

// PowerNotes are the lines under PowerText, without final periods: each
// contrast's model, then the pilot estimates clamped (ClampNote).
func PowerNotes(pw *Power) []string {
	var out []string
	for _, c := range pw.Curves {
		out = append(out, fmt.Sprintf("%s: rate of B %s%%, intra-scenario correlation %.3g, arm correlation %.3g (%s)", c.Name, Pct(c.Base), c.ICC, c.ArmCorr, c.Source))
	}
	for _, c := range pw.Curves {
		if n := c.ClampNote(); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// WritePower prints the contrasts' models and the power table.
func WritePower(w io.Writer, pw *Power) error {
	fmt.Fprintln(w, wrap(PowerText(pw), 100))
	fmt.Fprintln(w)
	for _, n := range PowerNotes(pw) {
		fmt.Fprintln(w, n)
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, strings.Join(PowerHeader, "\t"))
	for _, r := range PowerRows(pw) {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if d := SmallestDesign(pw, 0.8); len(d) > 0 {
		fmt.Fprintln(w)
		for _, s := range d {
			fmt.Fprintln(w, s)
		}
	}
	return nil
}

// SmallestDesign says, per contrast, the design with the fewest decisions
// per arm whose power reaches target (ties: fewer scenarios), or that none
// of the grid does.
func SmallestDesign(pw *Power, target float64) []string {
	var out []string
	for _, c := range pw.Curves {
		pts := slices.Clone(c.Points)
		slices.SortStableFunc(pts, func(a, b curvePoint) int {
			return cmp.Or(a.Decisions-b.Decisions, a.Scenarios-b.Scenarios)
		})
		if i := slices.IndexFunc(pts, func(p curvePoint) bool { return p.Power >= target }); i >= 0 {
			p := pts[i]
			out = append(out, fmt.Sprintf("%s: %g%% power first reached with %d scenarios × %d replicates over %d servers (%d decisions per arm, power %s%%).",
				c.Name, 100*target, p.Scenarios, p.Replicates, p.Servers, p.Decisions, Pct(p.Power)))
		} else {
			out = append(out, fmt.Sprintf("%s: no design of the grid reaches %g%% power.", c.Name, 100*target))
		}
	}
	return out
}
