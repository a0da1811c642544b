package coder

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/mcpstress/stress/study"
)

// fence matches an answer inside one Markdown code fence.
var fence = regexp.MustCompile("(?s)^```(?:json)?\\s*\\n(.*?)\\n?```$")

// answerBit is one bit of a coding answer.
type answerBit struct {
	Bit       *int    `json:"bit"`
	Evidence  *string `json:"evidence"`
	Rationale string  `json:"rationale"`
}

// parseAnswer reads a coder's answer: a JSON object
// {"control": {"D": {"bit": 0|1, "evidence": POINTER, "rationale": TEXT},
// …}, "content": {…}} with the six coordinates of both views, alone, with
// surrounding blanks or inside one Markdown code fence. Every set bit needs
// an evidence pointer that resolves in obs; an unset bit's evidence, if
// given, must resolve too (absent: the whole observation). A missing
// rationale becomes "(no rationale given)". Every bit is marked proposed.
func parseAnswer(text string, obs json.RawMessage) (study.ProfileCoding, error) {
	t := strings.TrimSpace(text)
	if m := fence.FindStringSubmatch(t); m != nil {
		t = strings.TrimSpace(m[1])
	}
	var raw map[string]map[string]answerBit
	dec := json.NewDecoder(strings.NewReader(t))
	if err := dec.Decode(&raw); err != nil {
		return study.ProfileCoding{}, fmt.Errorf("not a JSON object of two views: %v", err)
	}
	if dec.More() {
		return study.ProfileCoding{}, errors.New("text after the JSON object")
	}
	var errs []error
	out := study.ProfileCoding{Control: study.View{}, Content: study.View{}}
	for k := range raw {
		if k != "control" && k != "content" {
			errs = append(errs, fmt.Errorf("unknown view %q (want control and content)", k))
		}
	}
	for _, view := range []string{"control", "content"} {
		v, ok := raw[view]
		if !ok {
			errs = append(errs, fmt.Errorf("view %s missing", view))
			continue
		}
		dst := out.Control
		if view == "content" {
			dst = out.Content
		}
		for k := range v {
			if !study.ValidField(view + "." + k) {
				errs = append(errs, fmt.Errorf("%s: unknown coordinate %q", view, k))
			}
		}
		for _, c := range study.Coordinates {
			f := view + "." + c
			b, ok := v[c]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s: missing", f))
				continue
			case b.Bit == nil || (*b.Bit != 0 && *b.Bit != 1):
				errs = append(errs, fmt.Errorf("%s.bit: want 0 or 1", f))
				continue
			case *b.Bit == 1 && (b.Evidence == nil || *b.Evidence == ""):
				errs = append(errs, fmt.Errorf("%s.evidence: a set bit needs an evidence pointer into the observation", f))
				continue
			}
			ev := ""
			if b.Evidence != nil {
				ev = *b.Evidence
			}
			if _, err := study.Resolve(obs, ev); err != nil {
				errs = append(errs, fmt.Errorf("%s.evidence: %v", f, err))
				continue
			}
			r := strings.Join(strings.Fields(b.Rationale), " ")
			if r == "" {
				r = "(no rationale given)"
			}
			dst[c] = study.Bit{Bit: *b.Bit, Evidence: ev, Rationale: r, Proposed: true}
		}
	}
	if len(errs) > 0 {
		return study.ProfileCoding{}, errors.Join(errs...)
	}
	return out, nil
}
