package conditions

import "github.com/mcpstress/stress/study"

// Expresses reports whether condition c's rendering of scenario s carries
// what defines c (its entry's rule in Table), so that a contrast of c with
// another condition is made only on the scenarios both express
// (like-for-like; docs/error-shapes.md):
//
//   - the paired conditions, the factorial cells, envelope and its
//     misplaced-trust variants: every scenario (what they add is built
//     from every record);
//   - category and its channel and misplaced-trust variants: when the
//     condition's result exists (contractResult ok: the cause has a
//     category);
//   - an error shape (study.ShapeConditions): when one of its parts acts
//     on the record (ShapeResult): sep2145 when it moves a JSON-RPC error
//     the server answered to an isError result; the classifying arms
//     (Classifies) when the result carries _meta[study.ToolFailureKey];
//     ratelimited when the failure is the -32023 error (the server's own
//     rate limit announcing its wait, ownRateLimit); a combination when
//     any of its parts does (sep2145+ratelimited: moved or -32023;
//     toolfailure+sep2145: classified, every moved error having a class).
//
// A scenario a shape leaves as recorded (a success-shaped result, a
// timeout the client raised, a JSON-RPC error under toolfailure, an
// upstream rate limit under ratelimited) shows that arm's reader nothing
// of the proposal: it is the record under another name. A scenario whose
// rendering fails is not expressed (rendering it fails the run).
func Expresses(s *study.Scenario, c study.Condition) bool {
	sp, ok := specs[c]
	if !ok {
		return false
	}
	return sp.expresses == nil || sp.expresses(s, c)
}

// hasCategory is a category condition's expresses: its result exists
// (the cause has a category) and renders.
func hasCategory(s *study.Scenario, c study.Condition) bool {
	_, ok, err := categoryResultOf(s, c)
	return ok && err == nil
}

// shapeActs is an error shape's expresses: one of its parts acts on the
// record (ShapeResult moved, classified or rate-limited it).
func shapeActs(s *study.Scenario, c study.Condition) bool {
	sh, err := shape(s, c)
	if err != nil || !sh.ok {
		return false
	}
	return c.MovesToResult() && sh.moved || c.Classifies() && sh.classified || c.RateLimits() && sh.rateLimited
}

// Unexpressed returns the conditions of conds that do not express
// scenario s (Expresses), in the order of conds; nil when every one does.
func Unexpressed(s *study.Scenario, conds []study.Condition) []study.Condition {
	var out []study.Condition
	for _, c := range conds {
		if !Expresses(s, c) {
			out = append(out, c)
		}
	}
	return out
}
