package analysis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mcpstress/stress/results"
	"github.com/mcpstress/stress/simulator"
	"github.com/mcpstress/stress/study"
)

// ErrArmSelection marks a Compare failure to resolve -arm-a or -arm-b.
var ErrArmSelection = errors.New("arm selection")

// CompareOptions tunes Compare; the zero value compares every column of
// automatically aligned arms with the default bootstrap.
type CompareOptions struct {
	Options // B, Seed and Conf (Pairs and NoPredeclared are not used)
	// Columns are the columns to compare; nil means every 0/1 column both
	// bundles have: the lab ones (recovered, harm) only when both have
	// decisions with lab outcomes.
	Columns []simulator.Col
	// ArmA and ArmB select one arm of each bundle, as MODEL or
	// MODEL/PROMPT; "" aligns arms automatically (see Compare).
	ArmA, ArmB string
	// Pair, when not nil, sets level A of a factor in bundle A against
	// level B in bundle B (its Column is not used; Columns is): condition
	// A's decisions against condition B's in every aligned arm pair,
	// prompt A's arms against prompt B's of the same model, or model A's
	// arms against model B's under the same prompt. It excludes ArmA and
	// ArmB.
	Pair *PairSpec
}

// Comparison pairs the decisions of two bundles on the same corpus.
type Comparison struct {
	Bootstrap bootstrapInfo `json:"bootstrap"`
	Arms      []ArmPair     `json:"arms"`
	Family    familyInfo    `json:"family"` // every row
	Rows      []compareRow  `json:"pairs"`
	Caveats   []string      `json:"caveats,omitempty"`
}

// ArmPair is an arm of bundle A aligned with an arm of bundle B.
type ArmPair struct {
	A Arm `json:"a"`
	B Arm `json:"b"`
}

// compareRow is one cell's paired difference A − B on one column, over
// decisions matched on (condition, scenario, replicate).
type compareRow struct {
	ArmPair
	Condition study.Condition `json:"condition"`
	// ConditionB is B's condition when a condition pair maps A's
	// Condition to another one; "" when it is the same.
	ConditionB study.Condition `json:"condition_b,omitempty"`
	Column     simulator.Col   `json:"column"`
	PairStats
	Adjusted
}

// findArm resolves MODEL/PROMPT or MODEL (when the model has one prompt).
func (a *Accumulator) findArm(sel string) (int32, error) {
	var hits []int32
	for g, arm := range a.groupArm {
		if arm.String() == sel {
			return int32(g), nil
		}
		if arm.Model == sel {
			hits = append(hits, int32(g))
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return 0, fmt.Errorf("no arm %q (arms: %s)", sel, a.armList())
	}
	return 0, fmt.Errorf("model %q has several prompts; name one as MODEL/PROMPT (arms: %s)", sel, a.armList())
}

func (a *Accumulator) armList() string {
	var s []string
	for _, arm := range a.groupArm {
		s = append(s, arm.String())
	}
	return strings.Join(s, ", ")
}

// align pairs the arms of a and b: the selected ones; else the same arms
// when both bundles have the same set; else the single arm of each.
func align(a, b *Accumulator, selA, selB string, pair *PairSpec) ([][2]int32, error) {
	if pair != nil && (pair.Factor == FactorPrompt || pair.Factor == FactorModel) {
		var out [][2]int32
		for ga, arm := range a.groupArm {
			other, ok := pair.counterpart(arm)
			if !ok {
				continue
			}
			if gb, ok := b.groups[other]; ok {
				out = append(out, [2]int32{int32(ga), gb})
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%w: -pair %s: no arm of A with %s %s has a counterpart in B with %s %s (A: %s; B: %s)",
				ErrArmSelection, pair, pair.Factor, pair.A, pair.Factor, pair.B, a.armList(), b.armList())
		}
		return out, nil
	}
	if selA != "" || selB != "" {
		// An unselected side takes its single arm, or the other's selection.
		orSingle := func(acc *Accumulator, sel, other string) string {
			switch {
			case sel != "":
				return sel
			case len(acc.groupArm) == 1:
				return acc.groupArm[0].String()
			}
			return other
		}
		selA, selB = orSingle(a, selA, selB), orSingle(b, selB, selA)
		ga, err := a.findArm(selA)
		if err != nil {
			return nil, fmt.Errorf("%w: bundle A: %v", ErrArmSelection, err)
		}
		gb, err := b.findArm(selB)
		if err != nil {
			return nil, fmt.Errorf("%w: bundle B: %v", ErrArmSelection, err)
		}
		return [][2]int32{{ga, gb}}, nil
	}
	if len(a.groupArm) == 0 || len(b.groupArm) == 0 {
		return nil, fmt.Errorf("a bundle has no decisions to compare (A: %d arms, B: %d arms)", len(a.groupArm), len(b.groupArm))
	}
	same := len(a.groupArm) == len(b.groupArm)
	var out [][2]int32
	for ga, arm := range a.groupArm {
		gb, ok := b.groups[arm]
		if !ok {
			same = false
			break
		}
		out = append(out, [2]int32{int32(ga), gb})
	}
	if same {
		return out, nil
	}
	if len(a.groupArm) == 1 && len(b.groupArm) == 1 {
		return [][2]int32{{0, 0}}, nil
	}
	return nil, fmt.Errorf("the bundles have different model/prompt arms (A: %s; B: %s): choose one of each with -arm-a and -arm-b",
		a.armList(), b.armList())
}

// CompareNotes returns what differs between bundles a and b beyond their
// corpus, which a reader of cmp, their comparison, should weigh: the
// prompt templates (by sha256) or the models (by pinned id) of an aligned
// arm pair, and the study seeds.
func CompareNotes(a, b *BundleInfo, cmp *Comparison) []string {
	var notes []string
	promptSHA := func(bi *BundleInfo, name string) string {
		for _, p := range bi.Prompts {
			if p.Name == name {
				return p.SHA256
			}
		}
		return ""
	}
	modelsA, modelsB := a.RunModels(), b.RunModels()
	for _, ap := range cmp.Arms {
		if sa, sb := promptSHA(a, ap.A.Prompt), promptSHA(b, ap.B.Prompt); sa != sb {
			notes = append(notes, fmt.Sprintf("the prompt templates differ: A %s has sha256 %.12s…, B %s has sha256 %.12s…", ap.A, sa, ap.B, sb))
		}
		if ia, ib := modelsA[ap.A.Model].ModelID, modelsB[ap.B.Model].ModelID; ia != ib {
			notes = append(notes, fmt.Sprintf("the models differ: A %s is %q, B %s is %q", ap.A.Model, ia, ap.B.Model, ib))
		}
	}
	if a.Manifest.Seed != b.Manifest.Seed {
		notes = append(notes, fmt.Sprintf("the study seeds differ (%d and %d): replicates are matched by number, but their sampling seeds are not paired", a.Manifest.Seed, b.Manifest.Seed))
	}
	return notes
}

// Compare pairs the decisions of arm pairs of bundles a and b by
// (condition, scenario, replicate) and computes, per condition and column,
// the paired difference A − B with its discordant counts, exact McNemar
// p-value and cluster-bootstrap interval (servers resampled).
//
// Arms are aligned as selected by opt.ArmA and opt.ArmB; otherwise arm by
// arm when both bundles have the same (model, prompt) arms, or the single
// arm of each when each has one. Compare refuses (an error naming the
// first differences) aligned arms whose decision keys differ: a decision
// (condition, scenario, replicate) present in one bundle and not the
// other, or a scenario on a different server. Check the corpus hashes
// with SameCorpus first. A cancelled ctx stops it between rows.
func Compare(ctx context.Context, a, b *Accumulator, opt CompareOptions) (*Comparison, error) {
	o := opt.Options.withDefaults()
	if err := o.check(); err != nil {
		return nil, err
	}
	// Note: a comparison pairs units across two bundles through their
	// pairing tables, which grow with the bundles (Accumulator).
	if err := errors.Join(a.table(), b.table()); err != nil {
		return nil, err
	}
	cols := opt.Columns
	if len(cols) == 0 {
		for _, c := range pairColumns {
			if !isLab(c) || a.Lab() && b.Lab() {
				cols = append(cols, c)
			}
		}
	}
	for _, c := range cols {
		if colBit(c) == 0 {
			return nil, fmt.Errorf("unknown column %q (want one of %v)", c, pairColumns)
		}
	}
	pair := opt.Pair
	if pair != nil {
		if opt.ArmA != "" || opt.ArmB != "" {
			return nil, fmt.Errorf("%w: -pair and -arm-a/-arm-b exclude each other", ErrArmSelection)
		}
		p, err := resolveCompare(a, b, *pair)
		if err != nil {
			return nil, err
		}
		pair = &p
	}
	arms, err := align(a, b, opt.ArmA, opt.ArmB, pair)
	if err != nil {
		return nil, err
	}
	condPair := pair != nil && pair.Factor == FactorCondition
	cmp := &Comparison{Bootstrap: bootstrapInfo{B: o.B, Seed: o.Seed, Conf: o.Conf, Cluster: "server", Clusters: len(a.servers.names)}}
	order := a.serverOrder()
	for _, ab := range arms {
		ga, gb := ab[0], ab[1]
		match, err := matchUnits(a, b, ga, gb, !condPair)
		if err != nil {
			return nil, err
		}
		arms := ArmPair{a.groupArm[ga], b.groupArm[gb]}
		cmp.Arms = append(cmp.Arms, arms)
		for ci, cond := range study.AllConditions {
			cj, condB := ci, study.Condition("")
			if condPair {
				if string(cond) != pair.A {
					continue
				}
				condB = study.Condition(pair.B)
				cj = condIndex(condB)
				if cj < 0 || !b.hasCond(gb, condB) {
					continue
				}
			}
			if !a.hasCond(ga, cond) {
				continue
			}
			for _, col := range cols {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				pg := pairMatched(a, b, ga, gb, match, ci, cj, colBit(col), colNeed(col))
				cmp.Rows = append(cmp.Rows, compareRow{ArmPair: arms, Condition: cond, ConditionB: condB, Column: col,
					PairStats: pairStatsOf(pg, order, o)})
			}
		}
	}
	if condPair && len(cmp.Rows) == 0 {
		return nil, fmt.Errorf("%w: -pair %s: no aligned arm has condition %s in A and %s in B", ErrArmSelection, pair, pair.A, pair.B)
	}
	cmp.Family = adjustRows(cmp.Rows)
	if c := clusterCaveat(len(a.servers.names)); c != "" {
		cmp.Caveats = append(cmp.Caveats, c)
	}
	return cmp, nil
}

// pairMatched pairs the units of arm ga of a at condition index ci with
// their matches in arm gb of b at condition index cj (match: a's unit to
// b's) on a column's bit and need; a unit of either arm without a match
// is unpaired when it has the column.
func pairMatched(a, b *Accumulator, ga, gb int32, match map[int32]int32, ci, cj int, bit, need results.Flags) *pairing {
	pg := a.newPairing()
	matchedB := make(map[int32]bool, len(match))
	for ua, ub := range match {
		matchedB[ub] = true
		pg.pair(a, int(ua), a.flags(int(ua), ci), b.flags(int(ub), cj), bit, need)
	}
	for ua, k := range a.unitKeys {
		if _, ok := match[int32(ua)]; !ok && k.group == ga && a.flags(ua, ci)&need == need {
			pg.unpaired++
		}
	}
	for ub, k := range b.unitKeys {
		if !matchedB[int32(ub)] && k.group == gb && b.flags(ub, cj)&need == need {
			pg.unpaired++
		}
	}
	return pg
}

// resolveCompare fixes the factor of an unprefixed pair for Compare:
// conditions, then prompts (A's in bundle A, B's in bundle B), then
// models.
func resolveCompare(a, b *Accumulator, p PairSpec) (PairSpec, error) {
	if p.Factor != "" {
		return p, nil
	}
	has := func(acc *Accumulator, f func(Arm) string, v string) bool {
		return slices.ContainsFunc(acc.groupArm, func(x Arm) bool { return f(x) == v })
	}
	prompt := func(x Arm) string { return x.Prompt }
	model := func(x Arm) string { return x.Model }
	switch {
	case has(a, prompt, p.A) && has(b, prompt, p.B):
		p.Factor = FactorPrompt
	case has(a, model, p.A) && has(b, model, p.B):
		p.Factor = FactorModel
	default:
		return p, fmt.Errorf("%w: -pair %s: %q is not a condition, prompt or model of A with %q the same of B (A: %s; B: %s)",
			ErrArmSelection, p, p.A, p.B, a.armList(), b.armList())
	}
	return p, nil
}

// adjustRows adjusts the scenario-level sign-flip p-values of every row
// of a comparison together (the family is the table).
func adjustRows(rows []compareRow) familyInfo {
	pairs := make([]Pair, len(rows))
	for i := range rows {
		pairs[i].PairStats = rows[i].PairStats
	}
	fi := adjust(pairs, FamilyAll)
	for i := range rows {
		rows[i].Adjusted = pairs[i].Adjusted
	}
	return fi
}

// matchUnits maps the units of arm ga of a to those of arm gb of b, and
// refuses keys present on one side only (per condition) or scenarios on
// different servers.
//
// With strict false (a condition pair, whose two sides are different
// conditions) the keys are matched by scenario and replicate alone and
// nothing is refused but a scenario on different servers.
func matchUnits(a, b *Accumulator, ga, gb int32, strict bool) (map[int32]int32, error) {
	match := map[int32]int32{}
	matchedB := make([]bool, len(b.unitKeys))
	var problems []string
	more := 0
	report := func(format string, args ...any) {
		if len(problems) < 5 {
			problems = append(problems, fmt.Sprintf(format, args...))
		} else {
			more++
		}
	}
	seen := func(acc *Accumulator, u int32, ci int) bool {
		return acc.flags(int(u), ci)&results.FlagSeen != 0
	}
	keyName := func(acc *Accumulator, g int32, k unitKey, ci int) string {
		return fmt.Sprintf("%s/%s/%s/%d", acc.groupArm[g], study.AllConditions[ci], acc.scenarios.names[k.scenario], k.replicate)
	}
	for ua, k := range a.unitKeys {
		if k.group != ga {
			continue
		}
		ub, ok := int32(-1), false
		if s, found := b.scenarios.idx[a.scenarios.names[k.scenario]]; found {
			ub, ok = b.units.get(unitKey{gb, s, k.replicate})
		}
		for ci := range study.AllConditions {
			if !strict {
				break
			}
			inA := seen(a, int32(ua), ci)
			inB := ok && seen(b, ub, ci)
			if inA && !inB {
				report("A has decision %s, B does not", keyName(a, ga, k, ci))
			}
			if inB && !inA {
				report("B has decision %s, A does not", keyName(b, gb, b.unitKeys[ub], ci))
			}
		}
		if ok {
			match[int32(ua)] = ub
			matchedB[ub] = true
			sa, sb := a.servers.names[a.unitServer[ua]], b.servers.names[b.unitServer[ub]]
			if sa != sb {
				report("scenario %s is on server %s in A but %s in B", a.scenarios.names[k.scenario], sa, sb)
			}
		}
	}
	for ub, k := range b.unitKeys {
		if k.group != gb || matchedB[ub] || !strict {
			continue
		}
		for ci := range study.AllConditions {
			if seen(b, int32(ub), ci) {
				report("B has decision %s, A does not", keyName(b, gb, k, ci))
			}
		}
	}
	if len(problems) > 0 {
		if more > 0 {
			problems = append(problems, fmt.Sprintf("and %d more", more))
		}
		return nil, fmt.Errorf("decision keys of A arm %s and B arm %s do not match: %s",
			a.groupArm[ga], b.groupArm[gb], strings.Join(problems, "; "))
	}
	return match, nil
}

// WriteCompare prints the comparison, one line per (arm pair, condition,
// column).
func WriteCompare(w io.Writer, cmp *Comparison) error {
	bi := cmp.Bootstrap
	fmt.Fprintln(w, wrap(fmt.Sprintf("Paired differences A − B between two runs (decisions matched on condition, scenario and replicate; "+
		"no pooling). %s The bootstrap intervals resample the %d servers (%g%%, B = %d, seed %d). "+
		"Family for the adjusted p-values: every row of the table (%d with a p-value%s).",
		PairsLegend, bi.Clusters, 100*bi.Conf, bi.B, bi.Seed, cmp.Family.Size, untestableCount(cmp.Family)), 100))
	for _, c := range cmp.Caveats {
		fmt.Fprintln(w, wrap("Caveat: "+c, 100))
	}
	fmt.Fprintln(w)
	seen := map[string]bool{}
	tw := newTable(w)
	fmt.Fprintln(tw, "A arm\tB arm\tcondition\tcolumn\tpairs\tA\tB\tdiff\tA+B−\tA−B+\tMcNemar p\tflip p (scenario)\tflip p (server)\tHolm p\tBH p\tbootstrap\tboot-t\tnotes")
	var untestable []string
	for _, r := range cmp.Rows {
		cond := string(r.Condition)
		if r.ConditionB != "" {
			cond += " − " + string(r.ConditionB)
		}
		if r.Untestable {
			untestable = append(untestable, fmt.Sprintf("%s − %s %s on %s", r.A, r.B, cond, r.Column.Column().Label))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.A, r.B, cond, r.Column.Column().Label, pairCells(r.PairStats, r.Adjusted, seen))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeUntestable(w, untestable)
	writeLegend(w, seen)
	return nil
}
