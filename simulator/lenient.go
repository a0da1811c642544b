package simulator

import (
	"encoding/json"
	"strings"
)

// maxLenientObjects bounds the objects ParseLenient tries in one text (one
// per '{'), so that a long text of braces costs linear time.
const maxLenientObjects = 64

// ParseLenient reads a model's raw answer text as a lenient parser would,
// for the sensitivity analysis of "analyze -parser lenient"; it never
// scores a run. It accepts whatever ParseAnswer accepts, with the same
// labels, and also:
//
//   - text before or after the object (prose around it, a trailing
//     sentence, a second object after the first);
//   - a code fence in any form (on one line, unclosed, with text around);
//   - operation_status and recovery_policy values in any letter case and
//     with surrounding spaces ("FAILED", " Select_Tool ").
//
// It takes the first JSON object in the text, at any '{' (the first 64
// tried), that holds both fields with values in the vocabulary; failing
// that, the first object that holds both fields, then the first object at
// all, which gives the reason. Field names are still exact, and a label
// outside the vocabulary is still invalid.
func ParseLenient(text string) Answer {
	strict := ParseAnswer(text)
	if strict.Valid || strict.Reason == ReasonTooLarge {
		return strict
	}
	var withFields, first *Answer
	tried := 0
	for i := 0; i < len(text) && tried < maxLenientObjects; i++ {
		if text[i] != '{' {
			continue
		}
		tried++
		var obj map[string]any
		if err := json.NewDecoder(strings.NewReader(text[i:])).Decode(&obj); err != nil || obj == nil {
			continue
		}
		// Labels in any case, with surrounding spaces.
		a := fields(obj, func(s string) string { return strings.ToLower(strings.TrimSpace(s)) })
		if a.Valid {
			return a
		}
		_, hasStatus := obj["operation_status"]
		_, hasPolicy := obj["recovery_policy"]
		if hasStatus && hasPolicy && withFields == nil {
			withFields = &a
		}
		if first == nil {
			first = &a
		}
	}
	switch {
	case withFields != nil:
		return *withFields
	case first != nil:
		return *first
	}
	return strict
}
