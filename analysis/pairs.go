package analysis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mcpstress/stress/analysis/stats"
	"github.com/mcpstress/stress/conditions"
	"github.com/mcpstress/stress/internal/parallel"
	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// ErrPair marks an Analyze failure caused by one of the requested pairs
// (a -pair flag): its message starts "pair A,B[,COLUMN]:".
var ErrPair = errors.New("pair")

// Factor is a factor of the design whose two levels a paired comparison
// sets against each other: a condition, a prompt or a model. The other
// two factors are held fixed: each (model, prompt) for conditions, each
// (model, condition) for prompts, each (prompt, condition) for models.
type Factor string

// The factors a pair may compare.
const (
	FactorCondition Factor = "condition"
	FactorPrompt    Factor = "prompt"
	FactorModel     Factor = "model"
)

// Factors lists the factors a pair may name.
var Factors = []Factor{FactorCondition, FactorPrompt, FactorModel}

// PairSpec names a paired comparison: level A minus level B of a factor
// on a column, within each combination of the other factors.
type PairSpec struct {
	// Factor is the compared factor; "" (an unprefixed spec whose levels
	// are not both known conditions) is resolved against the bundle:
	// prompts, then models (see Accumulator.Analyze).
	Factor Factor
	A, B   string
	Column simulator.Col
	// Isolates says what a predeclared comparison of the factorial or the
	// delivery channels isolates: the factor and the levels held fixed
	// ("format at label, no statement") or the channel dropped; "" for
	// the paper's two and for requested pairs.
	Isolates string
	// LikeForLike says a condition contrast pairs only the scenarios
	// both of its conditions express (conditions.Expresses, as the
	// bundle's defaults table records it: Accumulator.NoteCoverage),
	// leaving the others out by name (Pair.Excluded): every one of
	// ShapeContrasts, and a requested condition pair of which a level is
	// an error shape (ParsePairSpec).
	LikeForLike bool
}

// String returns "A,B,column" for a condition pair (and an unresolved
// one), "factor:A,B,column" otherwise.
func (p PairSpec) String() string {
	s := fmt.Sprintf("%s,%s,%s", p.A, p.B, p.Column)
	if p.Factor == "" || p.Factor == FactorCondition {
		return s
	}
	return string(p.Factor) + ":" + s
}

// Predeclared lists the comparisons fixed in advance, all on Strict:
// conditions.Contrasts, the data beside the conditions' table
// (docs/specification.md section 4's code_only − normalized and
// structured − prose, the twelve simple effects of the factorial, the two
// delivery channels of the category contract, the error shapes), each
// like-for-like when one of its conditions is an error shape (as
// ParsePairSpec makes a requested pair). A comparison is computed in
// every arm that has both of its conditions. In a bundle where some
// scenario declares a proven preferred set wider than its preferred
// policy (Accumulator.NoteProvenSet), each is also computed on Proven,
// right after its Strict one (OnProven).
//
// Note: without such a scenario (the paper corpus) Proven is Strict on
// every decision, so a contrast on Proven would be its Strict contrast
// again, number for number: it is left out rather than counted twice in
// the family, where it would only double m and every adjusted p-value.
// The rule reads the corpus (the scenarios' declared sets), never the
// answers.
var Predeclared = predeclared(conditions.Contrasts)

// ShapeContrasts are the predeclared comparisons with an error shape
// (study.ShapeConditions), the like-for-like ones: made on the scenarios
// both conditions express, the others left out by name (a shape that
// leaves a record as it is shows it under another name, and would count
// the record's decisions as the shape's).
var ShapeContrasts = slices.DeleteFunc(slices.Clone(Predeclared), func(p PairSpec) bool { return !p.LikeForLike })

// predeclared is each contrast as a condition pair on Strict.
func predeclared(cs []conditions.Contrast) []PairSpec {
	out := make([]PairSpec, len(cs))
	for i, c := range cs {
		out[i] = PairSpec{Factor: FactorCondition, A: string(c.A), B: string(c.B), Column: simulator.Strict, Isolates: c.Isolates, LikeForLike: c.A.Shape() || c.B.Shape()}
	}
	return out
}

// OnProven returns specs with, when wide (a bundle with a proven
// preferred set wider than its preferred policy), each comparison on
// Strict followed by the same comparison on Proven.
func OnProven(specs []PairSpec, wide bool) []PairSpec {
	if !wide {
		return slices.Clone(specs)
	}
	var out []PairSpec
	for _, s := range specs {
		out = append(out, s)
		if s.Column == simulator.Strict {
			s.Column = simulator.Proven
			out = append(out, s)
		}
	}
	return out
}

// ParsePairSpec parses "[FACTOR:]A,B[,COLUMN]", FACTOR one of condition,
// prompt and model (any other text before a colon belongs to A); column
// is used when the spec names none (Strict, the zero simulator.Col). Without a
// factor, two known conditions are a condition pair; other names are left
// for the bundle to resolve (Factor ""). A condition pair of which a
// level is an error shape is like-for-like (PairSpec.LikeForLike), as
// ShapeContrasts are.
func ParsePairSpec(s string, column simulator.Col) (PairSpec, error) {
	body := strings.TrimSpace(s)
	var p PairSpec
	// Note: labels may hold colons (model llama3.2:3b), so a prefix that
	// is not a factor is part of the first level, not an error.
	if f, rest, ok := strings.Cut(body, ":"); ok && slices.Contains(Factors, Factor(strings.ToLower(strings.TrimSpace(f)))) {
		p.Factor = Factor(strings.ToLower(strings.TrimSpace(f)))
		body = rest
	}
	parts := strings.Split(body, ",")
	if len(parts) < 2 || len(parts) > 3 {
		return PairSpec{}, fmt.Errorf("pair %q: want [FACTOR:]A,B or [FACTOR:]A,B,COLUMN", s)
	}
	p.A, p.B, p.Column = strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1]), column
	if p.A == "" || p.B == "" {
		return PairSpec{}, fmt.Errorf("pair %q: a level is empty", s)
	}
	if p.A == p.B {
		return PairSpec{}, fmt.Errorf("pair %q: the two levels are the same", s)
	}
	ca, cb := study.Condition(p.A), study.Condition(p.B)
	switch {
	case p.Factor == FactorCondition:
		for _, c := range []study.Condition{ca, cb} {
			if !c.Valid() {
				return PairSpec{}, fmt.Errorf("pair %q: unknown condition %q (want one of %v)", s, c, study.AllConditions)
			}
		}
	case p.Factor == "" && ca.Valid() && cb.Valid():
		p.Factor = FactorCondition
	}
	if len(parts) == 3 {
		c, err := ParseColumn(parts[2])
		if err != nil {
			return PairSpec{}, fmt.Errorf("pair %q: %w", s, err)
		}
		p.Column = c
	}
	p.Column = cmp.Or(p.Column, simulator.Strict)
	if colBit(p.Column) == 0 {
		return PairSpec{}, fmt.Errorf("pair %q: unknown column %q (want one of %v)", s, p.Column, pairColumns)
	}
	p.LikeForLike = p.Factor == FactorCondition && (ca.Shape() || cb.Shape())
	return p, nil
}

// Pair is a paired comparison of two levels of a factor with the other
// factors fixed: for a condition pair Model and Prompt, for a prompt pair
// Model and Condition, for a model pair Prompt and Condition (the compared
// factor's field is "").
type Pair struct {
	Factor      Factor        `json:"factor"`
	Model       string        `json:"model"`
	Prompt      string        `json:"prompt"`
	Condition   string        `json:"condition,omitempty"`
	A           string        `json:"a"`
	B           string        `json:"b"`
	Column      simulator.Col `json:"column"`
	Predeclared bool          `json:"predeclared"`
	// Spec is the comparison this row belongs to (its String), the unit
	// of the report's per-contrast sections.
	Spec string `json:"spec"`
	// Isolates is PairSpec.Isolates: what a predeclared comparison of the
	// factorial or the delivery channels isolates; absent for the others.
	Isolates string `json:"isolates,omitempty"`
	// LikeForLike is PairSpec.LikeForLike: the pairs are only those on
	// the scenarios both conditions express.
	LikeForLike bool `json:"like_for_like,omitempty"`
	// Excluded is what a like-for-like contrast left out: the scenarios
	// of the arm that A or B does not express; absent when it left out
	// none (and for every other contrast).
	Excluded *excluded `json:"excluded,omitempty"`
	PairStats
	Adjusted
	scen []pairAgg // per scenario, for PilotContrasts
}

// Within names the fixed factors of the pair: model/prompt,
// model/condition or prompt/condition.
func (p Pair) Within() string {
	switch p.Factor {
	case FactorPrompt:
		return p.Model + "/" + p.Condition
	case FactorModel:
		return p.Prompt + "/" + p.Condition
	}
	return p.Model + "/" + p.Prompt
}

// excluded names the scenarios a like-for-like contrast left out of one
// arm, those that one of its two conditions does not express
// (conditions.Expresses), and counts what they held. Their decisions are
// neither paired nor counted unpaired.
type excluded struct {
	// Scenarios are the ids of the scenarios left out that have a
	// decision of A or B on the column in the arm, sorted.
	Scenarios []string `json:"scenarios"`
	// Pairs counts the matched pairs on them: what N would have added.
	Pairs int `json:"pairs"`
}

// Adjusted holds a pair's p-values adjusted for multiplicity over the
// declared family (familyInfo): Holm (family-wise error) and
// Benjamini–Hochberg (false discovery rate), both of the scenario-level
// sign-flip p-value; null for a pair outside the family or without a
// p-value.
type Adjusted struct {
	InFamily bool `json:"in_family"` // adjusted with the family
	// Untestable marks a pair of the declared family left out of it: no
	// scenario differs, so its scenario-level sign-flip test has nothing
	// to test (p = 1 by construction).
	Untestable bool `json:"untestable"`
	Holm       Num  `json:"holm_p"`
	BH         Num  `json:"bh_p"`
}

// PairStats are the paired statistics of A − B over decisions matched one
// to one (both counted, status ok; for a lab column, both with lab
// outcomes).
type PairStats struct {
	N            int    `json:"n"`             // matched pairs
	CountA       int    `json:"count_a"`       // pairs with the outcome under A
	CountB       int    `json:"count_b"`       // pairs with the outcome under B
	Diff         Num    `json:"diff"`          // (CountA − CountB) / N ∈ [−1, 1]; null when N = 0
	DiscordantAB int    `json:"discordant_ab"` // pairs with the outcome under A only
	DiscordantBA int    `json:"discordant_ba"` // pairs with the outcome under B only
	McNemarP     Num    `json:"mcnemar_p"`     // exact two-sided McNemar p (pairs taken as independent); null when N = 0
	Bootstrap    Bounds `json:"bootstrap"`     // percentile cluster-bootstrap interval of Diff (servers)
	// BootstrapT is the studentized cluster-bootstrap interval of Diff
	// (servers resampled, cluster-robust standard error), clipped to
	// [−1, 1]: closer to its nominal coverage with few servers.
	BootstrapT Bounds `json:"bootstrap_t"`
	// FlipScenario and FlipServer are the sign-flip randomization tests
	// of Diff with the scenario, and the server, as the exchangeable
	// unit (the replicates of a scenario need not be independent).
	FlipScenario flipTest `json:"sign_flip_scenario"`
	FlipServer   flipTest `json:"sign_flip_server"`
	// Unpaired counts decisions of either side left without a counted
	// partner (a missing decision, or a transport error on either side;
	// for a lab column, a partner without lab outcomes).
	Unpaired int             `json:"unpaired"`
	Warnings []stats.Warning `json:"warnings,omitempty"`
}

// flipTest is a sign-flip randomization test (stats.SignFlip) in the output.
type flipTest struct {
	P           Num  `json:"p"`           // two-sided p-value; null without pairs
	Clusters    int  `json:"clusters"`    // clusters with matched pairs
	Informative int  `json:"informative"` // clusters whose Σ(aᵢ − bᵢ) ≠ 0
	MinP        Num  `json:"min_p"`       // smallest attainable p-value, 2^(1−informative)
	Exact       bool `json:"exact"`       // full randomization distribution (else Monte Carlo)
}

// pairAgg accumulates matched pairs per cluster.
type pairAgg struct {
	n, ab, ba, a, b int
}

// add records one matched pair's outcomes.
func (p *pairAgg) add(x, y bool) {
	p.n++
	p.a += b2i(x)
	p.b += b2i(y)
	p.ab += b2i(x && !y)
	p.ba += b2i(y && !x)
}

// pairing collects the matched pairs of one comparison per server and
// per scenario.
type pairing struct {
	server, scenario []pairAgg
	unpaired         int
	// skip marks, by scenario, those a like-for-like contrast leaves out
	// (nil: none); left marks those of them with a decision of either
	// level, leftPairs counts their matched pairs.
	skip, left []bool
	leftPairs  int
}

func (a *Accumulator) newPairing() *pairing {
	return &pairing{server: make([]pairAgg, len(a.servers.names)), scenario: make([]pairAgg, len(a.scenarios.names))}
}

// leaveOut makes p leave out the scenarios skip marks (nil: none).
func (p *pairing) leaveOut(skip []bool) {
	if skip != nil {
		p.skip, p.left = skip, make([]bool, len(skip))
	}
}

// excluded is what p left out (nil when nothing), naming the scenarios
// by names.
func (p *pairing) excluded(names []string) *excluded {
	var ids []string
	for i, l := range p.left {
		if l {
			ids = append(ids, names[i])
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	return &excluded{Scenarios: ids, Pairs: p.leftPairs}
}

// skipped marks the scenarios that conditions ca or cb (indices of
// study.AllConditions) do not express, by the bundle's masks
// (unexpressedMasks); nil when none is marked.
func skipped(masks []uint64, ca, cb int) []bool {
	var skip []bool
	bits := uint64(1)<<ca | uint64(1)<<cb
	for i, m := range masks {
		if m&bits != 0 {
			if skip == nil {
				skip = make([]bool, len(masks))
			}
			skip[i] = true
		}
	}
	return skip
}

// pair records unit u's (its server and scenario) outcomes fa and fb.
func (p *pairing) pair(a *Accumulator, u int, fa, fb, bit, need results.Flags) {
	p.pairAt(a.unitServer[u], a.unitKeys[u].scenario, fa, fb, bit, need)
}

// pairAt records the outcomes fa and fb of a unit on server and scenario:
// a matched pair when both have the column (need), else an unpaired
// decision when one has.
func (p *pairing) pairAt(server, scenario int32, fa, fb, bit, need results.Flags) {
	okA, okB := fa&need == need, fb&need == need
	if p.skip != nil && p.skip[scenario] {
		if okA || okB {
			p.left[scenario] = true
		}
		if okA && okB {
			p.leftPairs++
		}
		return
	}
	if okA && okB {
		p.server[server].add(fa&bit != 0, fb&bit != 0)
		p.scenario[scenario].add(fa&bit != 0, fb&bit != 0)
		return
	}
	if okA || okB {
		p.unpaired++
	}
}

// joinPairing pairs, on a column's bit and need, the records of arm ga
// at condition index ca with those of arm gb at cb that have the same
// scenario and replicate, merging the two cells' records (both in
// increasing order: Accumulator.merged); a record without a partner is
// unpaired when it has the column. It is what the pairing table gives
// for the same rows, without the table. skip marks the scenarios a
// like-for-like contrast leaves out (nil: none).
func (a *Accumulator) joinPairing(ctx context.Context, ga int32, ca int, gb int32, cb int, bit, need results.Flags, skip []bool) (*pairing, error) {
	if err := a.records.sealed(); err != nil {
		return nil, err
	}
	open := func(g int32, c int) *recordReader {
		if b := a.index.blocks[blockKey{g, int8(c)}]; b != nil {
			return a.records.reader(b.from, b.to)
		}
		return a.records.reader(0, 0)
	}
	ra, rb := open(ga, ca), open(gb, cb)
	pg := a.newPairing()
	pg.leaveOut(skip)
	okA, okB := ra.next(), rb.next()
	for n := 1; okA || okB; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		x, y := &ra.current, &rb.current
		order := 0
		switch {
		case !okB:
			order = -1
		case !okA:
			order = 1
		case x.scenario != y.scenario:
			order = cmp.Compare(x.scenario, y.scenario)
		default:
			order = cmp.Compare(x.replicate, y.replicate)
		}
		switch order {
		case -1:
			pg.pairAt(a.index.server[x.scenario], x.scenario, x.flags, 0, bit, need)
			okA = ra.next()
		case 1:
			pg.pairAt(a.index.server[y.scenario], y.scenario, 0, y.flags, bit, need)
			okB = rb.next()
		default:
			pg.pairAt(a.index.server[x.scenario], x.scenario, x.flags, y.flags, bit, need)
			okA, okB = ra.next(), rb.next()
		}
	}
	return pg, errors.Join(ra.err, rb.err)
}

// Note: the studentized interval and the sign-flip tests stand beside the
// contract's percentile bootstrap and McNemar test
// (docs/specification.md section 4) rather than replace them: TestCoverage
// measures the percentile interval at 89–92% and the studentized one at
// 93.5–96% for a nominal 95% over the paper's 10 servers, and McNemar's
// size at up to 20% for a nominal 5% when the effect varies by scenario,
// against 2.5–4% for the sign-flip test.

// pairStatsOf turns a pairing into paired statistics: McNemar, both
// cluster bootstraps (servers visited in order) and the sign-flip tests
// by scenario and by server.
func pairStatsOf(pg *pairing, order []int32, opt Options) PairStats {
	var t pairAgg
	var clusters []stats.Cluster
	var dServer []int
	for _, si := range order {
		if int(si) >= len(pg.server) || pg.server[si].n == 0 {
			continue
		}
		p := pg.server[si]
		t.n, t.a, t.b, t.ab, t.ba = t.n+p.n, t.a+p.a, t.b+p.b, t.ab+p.ab, t.ba+p.ba
		clusters = append(clusters, stats.Cluster{N: p.n, Sum: float64(p.ab - p.ba)})
		dServer = append(dServer, p.ab-p.ba)
	}
	var dScen []int
	for _, p := range pg.scenario {
		if p.n > 0 {
			dScen = append(dScen, p.ab-p.ba)
		}
	}
	nan := math.NaN()
	noFlip := flipTest{P: Num(nan), MinP: Num(nan)}
	ps := PairStats{N: t.n, CountA: t.a, CountB: t.b, DiscordantAB: t.ab, DiscordantBA: t.ba, Unpaired: pg.unpaired,
		Diff: Num(nan), McNemarP: Num(nan), Bootstrap: Bounds{nan, nan}, BootstrapT: Bounds{nan, nan},
		FlipScenario: noFlip, FlipServer: noFlip}
	if t.n == 0 {
		ps.Warnings = []stats.Warning{{Kind: stats.NoPairs, Message: "no matched pairs"}}
		return ps
	}
	ps.Diff = Num(float64(t.ab-t.ba) / float64(t.n))
	ps.McNemarP = Num(stats.McNemarExact(t.ab, t.ba))
	iv := stats.ClusterBootstrap(clusters, opt.boot())
	ps.Bootstrap = Bounds{iv.Lo, iv.Hi}
	ps.Warnings = iv.Warnings
	bt := opt.boot()
	bt.Method = stats.Studentized
	ivt := stats.ClusterBootstrap(clusters, bt)
	ps.BootstrapT = Bounds{clip1(ivt.Lo), clip1(ivt.Hi)}
	fo := stats.FlipOptions{Seed: opt.Seed, Level: opt.level()}
	flip := func(d []int) flipTest {
		if len(d) == 0 {
			return noFlip
		}
		f := stats.SignFlip(d, fo)
		for _, w := range f.Warnings {
			if !slices.ContainsFunc(ps.Warnings, func(x stats.Warning) bool { return x.Kind == w.Kind }) {
				ps.Warnings = append(ps.Warnings, w)
			}
		}
		return flipTest{P: Num(f.P), Clusters: f.Clusters, Informative: f.Informative, MinP: Num(f.MinP), Exact: f.Exact}
	}
	if pg.scenario != nil {
		ps.FlipScenario = flip(dScen)
	}
	ps.FlipServer = flip(dServer)
	return ps
}

// clip1 limits a difference's bound to [−1, 1] (NaN stays NaN).
func clip1(x float64) float64 {
	if math.IsNaN(x) {
		return x
	}
	return min(max(x, -1), 1)
}

// resolve fixes the factor of an unprefixed spec whose levels are not
// both conditions: the prompts of the bundle, then its models.
func (a *Accumulator) resolve(s PairSpec) (PairSpec, error) {
	if s.Factor != "" {
		return s, nil
	}
	var prompts, models []string
	for _, arm := range a.groupArm {
		if !slices.Contains(prompts, arm.Prompt) {
			prompts = append(prompts, arm.Prompt)
		}
		if !slices.Contains(models, arm.Model) {
			models = append(models, arm.Model)
		}
	}
	switch {
	case slices.Contains(prompts, s.A) && slices.Contains(prompts, s.B):
		s.Factor = FactorPrompt
	case slices.Contains(models, s.A) && slices.Contains(models, s.B):
		s.Factor = FactorModel
	default:
		return s, fmt.Errorf("%w %s: %q and %q are not two conditions, two prompts or two models of the bundle (conditions %v; prompts %v; models %v); name the factor as condition:A,B, prompt:A,B or model:A,B",
			ErrPair, s, s.A, s.B, study.AllConditions, prompts, models)
	}
	return s, nil
}

// pairs computes the predeclared and requested comparisons in every
// combination of the other factors that has both levels (no pooling).
func (a *Accumulator) pairs(ctx context.Context, opt Options) ([]Pair, error) {
	var specs []PairSpec
	var pre []bool
	if !opt.NoPredeclared {
		specs = OnProven(Predeclared, a.provenWide)
		pre = make([]bool, len(specs))
		for i := range pre {
			pre[i] = true
		}
	}
	// The predeclared pairs (docs/specification.md section 4.6) are
	// silently absent from a bundle without their conditions.
	npre := len(specs)
	for i, s := range append(slices.Clone(opt.Declared), opt.Pairs...) {
		declared := i < len(opt.Declared)
		if colBit(s.Column) == 0 {
			return nil, fmt.Errorf("%w %s: unknown column %q (want one of %v)", ErrPair, s, s.Column, pairColumns)
		}
		s, err := a.resolve(s)
		if err != nil {
			return nil, err
		}
		// A comparison asked for twice is computed once.
		if slices.ContainsFunc(specs, func(x PairSpec) bool {
			return x.Factor == s.Factor && x.A == s.A && x.B == s.B && x.Column == s.Column
		}) {
			continue
		}
		specs, pre = append(specs, s), append(pre, declared)
	}
	if !a.merged() {
		if err := a.table(); err != nil {
			return nil, err
		}
	}
	order := a.serverOrder()
	masks := a.unexpressedMasks()
	out := []Pair{}
	bySpec := make([][]Pair, len(specs))
	errs := make([]error, len(specs))
	parallel.For(len(specs), func(i int) {
		if ctx.Err() == nil {
			bySpec[i], errs[i] = a.pairSpec(ctx, specs[i], order, masks, opt)
		}
	})
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return nil, err
	}
	for i, s := range specs {
		rows := bySpec[i]
		for j := range rows {
			rows[j].Predeclared, rows[j].Isolates = pre[i], s.Isolates
		}
		if len(rows) == 0 && !(pre[i] && i < npre) {
			return nil, fmt.Errorf("%w %s: %s", ErrPair, s, a.noLevels(s))
		}
		out = append(out, rows...)
	}
	return out, nil
}

// noLevels says why spec s matched nothing.
func (a *Accumulator) noLevels(s PairSpec) string {
	switch s.Factor {
	case FactorPrompt:
		return fmt.Sprintf("no model of the bundle has a condition under both prompts %s and %s (arms: %s)", s.A, s.B, a.armList())
	case FactorModel:
		return fmt.Sprintf("no prompt of the bundle has a condition under both models %s and %s (arms: %s)", s.A, s.B, a.armList())
	}
	return fmt.Sprintf("no model/prompt arm of the bundle has decisions under both %s and %s", s.A, s.B)
}

// pairSpec computes spec s in every combination of the other factors;
// masks are the bundle's unexpressedMasks, which a like-for-like
// contrast leaves out by.
func (a *Accumulator) pairSpec(ctx context.Context, s PairSpec, order []int32, masks []uint64, opt Options) ([]Pair, error) {
	var out []Pair
	bit, need := colBit(s.Column), colNeed(s.Column)
	merged := a.merged()
	var skip []bool
	// cells pairs arm ga at condition index ca with gb at cb: by merging
	// their records, or through the table (byTable).
	cells := func(ga int32, ca int, gb int32, cb int, byTable func() *pairing) (*pairing, error) {
		if merged {
			return a.joinPairing(ctx, ga, ca, gb, cb, bit, need, skip)
		}
		return byTable(), nil
	}
	if s.Factor == FactorCondition {
		ia, ib := condIndex(study.Condition(s.A)), condIndex(study.Condition(s.B))
		if s.LikeForLike && ia >= 0 && ib >= 0 {
			skip = skipped(masks, ia, ib)
		}
		for g, arm := range a.groupArm {
			if ia < 0 || ib < 0 || !a.hasCond(int32(g), study.Condition(s.A)) || !a.hasCond(int32(g), study.Condition(s.B)) {
				continue
			}
			pg, err := cells(int32(g), ia, int32(g), ib, func() *pairing {
				pg := a.newPairing()
				pg.leaveOut(skip)
				for u, k := range a.unitKeys {
					if k.group == int32(g) {
						pg.pair(a, u, a.flags(u, ia), a.flags(u, ib), bit, need)
					}
				}
				return pg
			})
			if err != nil {
				return nil, err
			}
			out = append(out, Pair{Factor: s.Factor, Model: arm.Model, Prompt: arm.Prompt, A: s.A, B: s.B, Column: s.Column,
				Spec: s.String(), LikeForLike: s.LikeForLike, Excluded: pg.excluded(a.scenarios.names),
				PairStats: pairStatsOf(pg, order, opt), scen: pg.scenario})
		}
		return out, nil
	}
	// Prompt or model: arm gA = (fixed, A) against gB = (fixed, B).
	for ga, armA := range a.groupArm {
		armB, ok := s.counterpart(armA)
		if !ok {
			continue
		}
		gb, ok := a.groups[armB]
		if !ok {
			continue
		}
		var match map[int32]int32 // the same scenario and replicate
		if !merged {
			match = map[int32]int32{}
			for u, k := range a.unitKeys {
				if k.group != int32(ga) {
					continue
				}
				if ub, ok := a.units.get(unitKey{gb, k.scenario, k.replicate}); ok {
					match[int32(u)] = ub
				}
			}
		}
		for ci, cond := range study.AllConditions {
			if !a.hasCond(int32(ga), cond) || !a.hasCond(gb, cond) {
				continue
			}
			pg, err := cells(int32(ga), ci, gb, ci, func() *pairing {
				return pairMatched(a, a, int32(ga), gb, match, ci, ci, bit, need)
			})
			if err != nil {
				return nil, err
			}
			p := Pair{Factor: s.Factor, Condition: string(cond), A: s.A, B: s.B, Column: s.Column, Spec: s.String(),
				PairStats: pairStatsOf(pg, order, opt), scen: pg.scenario}
			if s.Factor == FactorPrompt {
				p.Model = armA.Model
			} else {
				p.Prompt = armA.Prompt
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// counterpart returns, for a prompt or model contrast, the arm that arm
// is paired with: the same arm at level B when arm is at level A; ok is
// false otherwise (and for a condition contrast, whose arms are the same).
func (s *PairSpec) counterpart(arm Arm) (Arm, bool) {
	switch {
	case s.Factor == FactorPrompt && arm.Prompt == s.A:
		arm.Prompt = s.B
	case s.Factor == FactorModel && arm.Model == s.A:
		arm.Model = s.B
	default:
		return arm, false
	}
	return arm, true
}
