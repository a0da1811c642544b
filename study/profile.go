package study

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unique"
)

// Coordinates are the six actionability capabilities in profile order:
// failure detection, coarse policy, cause, repair target, executable
// repair, replay constraints (docs/specification.md section 5).
var Coordinates = []string{"D", "P", "C", "T", "E", "R"}

// Bit is one coded capability with its evidence.
type Bit struct {
	Bit       int    `json:"bit"`       // 0 or 1
	Evidence  string `json:"evidence"`  // JSON pointer into the observation
	Rationale string `json:"rationale"` // one line
	// Proposed marks a bit a rule proposed and no person has confirmed
	// (captured corpora); delete it when confirming.
	Proposed bool `json:"proposed,omitempty"`
}

// View is the coding of one view: a Bit per coordinate letter.
type View map[string]Bit

// ProfileCoding is the coding of both views of one observation.
type ProfileCoding struct {
	Control View `json:"control"` // every string opaque
	Content View `json:"content"` // model-visible text may be read
}

// intern makes the coding's evidence and rationale strings share one copy
// of each text (unique.Make) with every other record's: a corpus repeats
// them from record to record (the same cause, the same rule), and 16,667
// records held about 20 MB of copies. A corpus that keeps its codings is
// interned as it loads; nothing else keeps what it parses.
func (pc *ProfileCoding) intern() {
	for _, v := range []View{pc.Control, pc.Content} {
		for k, b := range v {
			b.Evidence, b.Rationale = unique.Make(b.Evidence).Value(), unique.Make(b.Rationale).Value()
			v[k] = b
		}
	}
}

// Profile is a six-bit actionability profile, bit i for Coordinates[i].
type Profile [6]bool

// ProfileOf reads the profile of a view.
func ProfileOf(v View) Profile {
	var p Profile
	for i, c := range Coordinates {
		p[i] = v[c].Bit == 1
	}
	return p
}

// String writes the profile as six digits in D/P/C/T/E/R order, e.g. "110000".
func (p Profile) String() string {
	b := make([]byte, 6)
	for i, x := range p {
		b[i] = '0'
		if x {
			b[i] = '1'
		}
	}
	return string(b)
}

// Dominates reports whether every capability of q is also in p (p ⪰ q).
func (p Profile) Dominates(q Profile) bool {
	for i := range p {
		if q[i] && !p[i] {
			return false
		}
	}
	return true
}

// Comparable reports whether p ⪰ q or q ⪰ p.
func (p Profile) Comparable(q Profile) bool { return p.Dominates(q) || q.Dominates(p) }

// ViewSummary tabulates one view over a corpus.
type ViewSummary struct {
	Counts       map[string]int // scenarios with the bit set, per coordinate
	Profiles     map[string]int // scenarios per profile string
	Incomparable int            // unordered scenario pairs whose profiles are incomparable
}

// Summarize tabulates a view over scenarios; pick selects the view.
// Note: incomparable pairs are counted over pairs of scenarios (i < j);
// a chain of profiles gives 0 either way.
func Summarize(scenarios []Scenario, pick func(*ProfileCoding) View) ViewSummary {
	s := ViewSummary{Counts: map[string]int{}, Profiles: map[string]int{}}
	for _, c := range Coordinates {
		s.Counts[c] = 0
	}
	profiles := make([]Profile, len(scenarios))
	for i := range scenarios {
		v := pick(&scenarios[i].Profile)
		for _, c := range Coordinates {
			s.Counts[c] += v[c].Bit
		}
		profiles[i] = ProfileOf(v)
		s.Profiles[profiles[i].String()]++
	}
	for i := range profiles {
		for j := i + 1; j < len(profiles); j++ {
			if !profiles[i].Comparable(profiles[j]) {
				s.Incomparable++
			}
		}
	}
	return s
}

// SortedProfiles lists the profile strings of s in descending binary order
// (111100 before 111000 before 100000), as the paper lists them.
func (s ViewSummary) SortedProfiles() []string {
	return slices.SortedFunc(maps.Keys(s.Profiles), func(a, b string) int { return strings.Compare(b, a) })
}

// ControlView and ContentView select a view of a coding, for Summarize.
func ControlView(c *ProfileCoding) View { return c.Control }

// ContentView selects the content-assisted view of a coding.
func ContentView(c *ProfileCoding) View { return c.Content }

func checkView(v View) error {
	if v == nil {
		return fmt.Errorf("missing")
	}
	for k := range v {
		known := false
		for _, c := range Coordinates {
			known = known || k == c
		}
		if !known {
			return fmt.Errorf("unknown coordinate %q (want D, P, C, T, E, R)", k)
		}
	}
	return nil
}
